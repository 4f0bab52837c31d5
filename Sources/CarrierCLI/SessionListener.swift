import CarrierNode
import CarrierSessions
import CarrierSignaling
import FileSafety
import Foundation
import RtcFileTransfer

/// `carrier listen --sessions` / `--service`: accepts friends' sessions,
/// serves the services to their port-forwarding streams, and takes their
/// streams' data (saved, echoed, or only counted), reporting each.
final class SessionListener: Sendable {
    let manager: SessionManager
    let output: Output
    /// Where each stream's data goes (DIR/session-SESSIONID-STREAM.bin), if anywhere.
    let receiveDirectory: String?
    let echo: Bool
    /// How much of a stream is saved, and the free space kept.
    let limits: StreamLimits
    private let task = TaskBox()

    init(
        manager: SessionManager, services: [ServiceRegistry.Service], receiveDirectory: String?, echo: Bool,
        limits: StreamLimits = StreamLimits(), output: Output
    ) async {
        self.manager = manager
        self.limits = limits
        for service in services { await manager.services.add(service) }
        await manager.services.onConnection { connection in
            output.event(
                "service \(connection.service) for \(connection.peer): "
                    + (connection.error.map { "refused or cut: \($0)" }
                        ?? "\(connection.bytesIn) bytes in, \(connection.bytesOut) out"),
                [
                    "event": "serviceConnection", "service": connection.service, "peer": connection.peer,
                    "bytesIn": connection.bytesIn, "bytesOut": connection.bytesOut, "error": connection.error ?? "",
                ])
        }
        self.receiveDirectory = receiveDirectory
        self.echo = echo
        self.output = output
        let sessions = manager.incomingSessions
        task.set(
            Task { [self] in
                for await session in sessions {
                    output.event(
                        "session \(session.id) from \(session.peer)",
                        ["event": "sessionOpened", "sessionId": session.id, "from": session.peer])
                    Task { await self.serve(session) }
                }
            })
    }

    private func serve(_ session: Session) async {
        for await stream in session.incomingStreams {
            Task { await take(stream, of: session) }
        }
        output.event(
            "session \(session.id) from \(session.peer) ended: \(await session.endDetail ?? "closed")",
            ["event": "sessionEnded", "sessionId": session.id, "detail": await session.endDetail ?? ""])
    }

    /// Reads a stream to its end (echoing or saving it), then ends our side.
    /// What is saved is bounded (`limits`): a stream past its size, or one
    /// that would leave the disk with less than the reserve, is cut and its
    /// file kept as far as it got.
    private func take(_ stream: SessionStream, of session: Session) async {
        let streamId = Int(stream.id ?? 0)
        var file: FileHandle?
        var path: String?
        var failure: String?
        if let receiveDirectory {
            (file, path, failure) = Self.create(in: receiveDirectory, sessionId: session.id, stream: streamId)
        }
        let hash = Sha256()
        var total = 0
        var space = file.map { _ in FreeSpace.Guard(directory: receiveDirectory ?? ".", reserve: limits.diskReserve) }
        do {
            while failure == nil, let bytes = try await stream.read() {
                total += bytes.count
                hash.update(bytes)
                if let handle = file {
                    if let why = limits.refusal(total: total) ?? space?.refusal(adding: bytes.count) {
                        failure = why
                        break
                    }
                    try handle.write(contentsOf: bytes)
                }
                if echo { try await stream.write(bytes) }
            }
            if failure != nil { stream.close() } else { stream.finish() }
        } catch {
            failure = "\(error)"
        }
        try? file?.close()
        let digest = Sha256.hex(hash.finish())
        output.event(
            "session \(session.id) stream \(streamId): received \(total) bytes, sha256 \(digest)"
                + (path.map { " → \($0)" } ?? "") + (failure.map { "; error: \($0)" } ?? ""),
            [
                "event": "sessionStream", "sessionId": session.id, "stream": streamId, "bytes": total,
                "sha256": digest, "path": path ?? "", "error": failure ?? "",
            ])
    }

    /// A new file for a stream, 0600, never over an existing one; or why not.
    private static func create(in directory: String, sessionId: String, stream: Int) -> (FileHandle?, String?, String?)
    {
        guard let target = PerCallPath.sessionStream(directory, sessionId: sessionId, stream: stream) else {
            return (nil, nil, "a session id that cannot name a file: not saved")
        }
        if case .failure(let failure) = PrivateFiles.makeDirectory(directory) { return (nil, nil, "\(failure)") }
        switch PrivateFiles.create(target) {
        case .success(let descriptor):
            return (FileHandle(fileDescriptor: descriptor, closeOnDealloc: true), target, nil)
        case .failure(let failure): return (nil, nil, "\(failure)")
        }
    }

    func stop() async {
        task.cancel()
        await manager.stop()
    }
}
