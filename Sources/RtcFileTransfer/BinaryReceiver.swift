import AsyncExtras
import FileSafety
import Foundation

/// The receiving side of the binary file protocol (docs/file-protocol.md):
/// a JSON header, then the bytes as binary messages, then our ack with the
/// SHA-256 we computed. One file at a time, at most `maxSize`, written to a
/// hidden temporary file and placed under its safe name (never over another
/// file) only when the hash matches the header's. Every file ends in exactly
/// one outcome. Owned by a `FileTransferEndpoint`, whose actor serialises the
/// calls; it says what to do in the returned actions, in order.
struct BinaryReceiver {
    /// What the endpoint must do, in this order.
    enum Action {
        case progress(FileTransferEndpoint.Progress)
        case ended(FileTransferEndpoint.Outcome)
        /// A protocol message to send the peer (the ack).
        case reply(String)
    }

    private struct File {
        var name: String
        var size: UInt64
        var expected: String
        var received: UInt64 = 0
        var file: BlockFile
        var temporaryPath: String
        var digest = Sha256()
        var started = ContinuousClock.now
        var lastProgress = ContinuousClock.now
    }

    /// Where files go; nil refuses every file.
    let directory: String?
    let maxSize: UInt64
    private var current: File?

    init(directory: String?, maxSize: UInt64) {
        self.directory = directory
        self.maxSize = maxSize
    }

    /// The file being received, if one is.
    var receivingName: String? { current?.name }

    /// A file header. A refusal (no directory, too large, one already under
    /// way, no temporary file) is an ack with ok false at once, so the sender
    /// does not send it all and wait.
    mutating func header(name: String, size: UInt64, sha256: String) -> [Action] {
        let safe = FileMessage.safeName(name)
        let refusal = [Action.reply(FileMessage.ack(name: safe, size: 0, sha256: "", ok: false).json)]
        guard let directory, size <= maxSize, current == nil else { return refusal }
        // A directory that cannot be made shows as the temporary file failing just below.
        PrivateFiles.makeDirectory(directory)
        let temporary = directory + "/.\(safe).partial-\(UInt32.random(in: 0...UInt32.max))"
        guard let file = BlockFile.create(temporary) else { return refusal }
        current = File(name: safe, size: size, expected: sha256.lowercased(), file: file, temporaryPath: temporary)
        return size == 0 ? finish() : []
    }

    /// Bytes of the file under way (the caller checks `receivingName` first).
    mutating func bytes(_ bytes: [UInt8]) -> [Action] {
        guard var file = current else { return [] }
        // More bytes than the header announced, or a file that cannot be written: it ends.
        guard file.received + UInt64(bytes.count) <= file.size, (try? file.file.write(bytes)) != nil else {
            return abort(cancelled: false, tellPeer: true)
        }
        file.digest.update(bytes)
        file.received += UInt64(bytes.count)
        var actions: [Action] = []
        if ContinuousClock.now - file.lastProgress > .milliseconds(250) {
            file.lastProgress = ContinuousClock.now
            actions.append(.progress(.init(name: file.name, bytes: file.received, total: file.size, sending: false)))
        }
        current = file
        return file.received == file.size ? actions + finish() : actions
    }

    /// Ends the file under way: cancelled by either side, or the channel closed
    /// (`tellPeer` false when the peer knows already or cannot hear).
    mutating func abort(cancelled: Bool, tellPeer: Bool) -> [Action] {
        guard let file = current else { return [] }
        current = nil
        file.file.close()
        try? FileManager.default.removeItem(atPath: file.temporaryPath)  // tidying: a dot name, never read
        let outcome = Action.ended(
            .init(
                name: file.name, bytes: file.received, sha256: "", ok: false, seconds: 0, path: nil,
                cancelled: cancelled, announcedBytes: file.size))
        guard tellPeer else { return [outcome] }
        return [.reply(FileMessage.ack(name: file.name, size: file.received, sha256: "", ok: false).json), outcome]
    }

    private mutating func finish() -> [Action] {
        guard let file = current else { return [] }
        current = nil
        file.file.close()
        let actual = Sha256.hex(file.digest.finish())
        let ok = actual == file.expected
        var path: String?
        if ok, let directory {
            // Never over an existing file: `name (1).ext` and so on.
            path = try? FilePlacement.place(file.temporaryPath, in: directory, as: file.name)
        }
        // Removing a temporary file is tidying: one left behind is hidden (a dot name) and never read.
        if path == nil { try? FileManager.default.removeItem(atPath: file.temporaryPath) }
        // The application hears of the file before the sender hears the ack (and
        // perhaps ends the connection).
        return [
            .ended(
                .init(
                    name: file.name, bytes: file.received, sha256: actual, ok: ok && path != nil,
                    seconds: (ContinuousClock.now - file.started).inSeconds, path: path, announcedBytes: file.size)),
            .reply(FileMessage.ack(name: file.name, size: file.received, sha256: actual, ok: ok && path != nil).json),
        ]
    }
}
