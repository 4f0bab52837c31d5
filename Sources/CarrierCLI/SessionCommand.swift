import CarrierNode
import CarrierSessions
import CarrierSignaling
import Foundation

struct SessionCommand: Command {
    static let name = "session"
    static let daemonUse = DaemonUse.exclusive
    static let summary = "open a session with a friend: stdin to a stream, the stream to stdout"
    static let help = """
        Usage: carrier session USERID [options]

        Goes online, opens a session with the friend (negotiated as invites to
        USERID:session; the friend runs `carrier listen --sessions`), opens one
        stream on it, and copies stdin to the stream and the stream to stdout, so
        pipes work: `carrier session FRIEND < file`, `tar c dir | carrier session
        FRIEND`. The end of stdin ends our side; the command exits once the friend
        has ended its side too (`listen --sessions` does at once, or after echoing
        with --echo). Progress and the summary go to stderr.

          --unreliable           an unordered stream without retransmissions
        \(SessionOptions.help)
        With --json a JSON summary goes to stderr: sessionId, setupMs, bytesSent,
        bytesReceived, seconds, MBps. Exit 0 only if every byte went and the
        friend ended its side cleanly.
        """
    static let valued = SessionOptions.valued
    static let flags: Set<String> = ["--unreliable"]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let peerText = try arguments.positionals(1...1, usage: "carrier session USERID [options]")[0]
        guard let friend = UserId(peerText) else { throw CarrierError.invalidUserId(peerText) }
        let wait = try arguments.seconds("--wait", default: 60)
        let configuration = try SessionOptions.configuration(arguments, global)
        let options: SessionStream.Options = arguments.flag("--unreliable") ? [] : [.reliable]
        return try await global.withOnlineNode { node in
            guard try await global.waitForFriend(friend, on: node, timeout: wait) else { return 1 }
            let manager = try await SessionManager.start(on: node, configuration: configuration)
            let started = ContinuousClock.now
            let session: Session
            let stream: SessionStream
            do {
                session = try await manager.openSession(to: friend.description)
                stream = try await session.openStream(options)
            } catch {
                global.output.log("error: cannot open a session with \(friend): \(error)")
                await manager.stop()
                return 1
            }
            let setupMs = (ContinuousClock.now - started).milliseconds
            global.output.log("session \(session.id) connected in \(rounded(setupMs)) ms; stream \(stream.id ?? 0)")
            let copyStarted = ContinuousClock.now
            async let sent = copyStdin(to: stream)
            async let received = copyToStdout(from: stream)
            let (up, down) = await (sent, received)
            let seconds = (ContinuousClock.now - copyStarted).inSeconds
            await session.close()
            await manager.stop()
            let failure = up.error ?? down.error
            let rate = rounded(Double(max(up.bytes, down.bytes)) / 1e6 / max(seconds, 1e-9))
            let summary: [String: any Sendable] = [
                "sessionId": session.id, "setupMs": rounded(setupMs), "bytesSent": up.bytes,
                "bytesReceived": down.bytes, "seconds": rounded(seconds), "MBps": rate, "ok": failure == nil,
            ]
            global.output.log(
                global.output.json
                    ? Output.encode(summary.merging(failure.map { ["error": $0] } ?? [:]) { $1 })
                    : "sent \(up.bytes) bytes, received \(down.bytes) bytes in \(rounded(seconds)) s (\(rate) MB/s)"
                        + (failure.map { "; error: \($0)" } ?? ""))
            return failure == nil ? 0 : 1
        }
    }

    private static func copyStdin(to stream: SessionStream) async -> (bytes: Int, error: String?) {
        let reader = BlockingReader()
        var total = 0
        for await chunk in reader.chunks {
            do { try await stream.write(chunk) } catch { return (total, "sending: \(error)") }
            total += chunk.count
            reader.taken()
        }
        stream.finish()
        return (total, nil)
    }

    private static func copyToStdout(from stream: SessionStream) async -> (bytes: Int, error: String?) {
        var total = 0
        do {
            while let bytes = try await stream.read() {
                total += bytes.count
                try FileHandle.standardOutput.write(contentsOf: bytes)
            }
            return (total, nil)
        } catch {
            return (total, "receiving: \(error)")
        }
    }
}
