import AsyncExtras
import FileSafety
import Foundation

/// Files that arrive as the reference peers send them: JSON chunks
/// (`ChunkMessage`), numbered from 0, the last one marked `end`, at most
/// `maxFiles` at once. Each file is written to a hidden temporary file in the
/// receive directory and placed under its safe name only when complete (and
/// matching the SHA-256 when the sender gave one). Every file ends in exactly
/// one outcome. Owned by a `FileTransferEndpoint` (its actor serialises the
/// calls); it reports through the returned values, not callbacks.
struct ChunkedReceiver {
    /// What a chunk led to.
    enum Report {
        case progress(FileTransferEndpoint.Progress)
        case ended(FileTransferEndpoint.Outcome)
    }

    private struct File {
        var name: String
        var nextIndex = 0
        var received: UInt64 = 0
        var file: BlockFile
        var temporaryPath: String
        var digest = Sha256()
        var started = ContinuousClock.now
        var size: UInt64?
    }

    let directory: String
    let maxSize: UInt64
    let maxFiles: Int
    private var files: [String: File] = [:]

    init(directory: String, maxSize: UInt64, maxFiles: Int) {
        self.directory = directory
        self.maxSize = maxSize
        self.maxFiles = maxFiles
    }

    /// The names of the files under way (to tell the peer when cancelling).
    var namesInProgress: [String] { files.values.map(\.name).sorted() }

    /// One chunk; nil when it is ignored (a file that did not start at chunk
    /// 0, or one too many at once).
    mutating func receive(_ chunk: ChunkMessage) -> Report? {
        if files[chunk.fileId] == nil {
            guard chunk.index == 0, files.count < maxFiles else { return nil }
            // A directory that cannot be made shows as the temporary file failing just below.
            PrivateFiles.makeDirectory(directory)
            let name = FileMessage.safeName(
                chunk.name ?? ChunkMessage.fallbackName(fileId: chunk.fileId, mime: chunk.mime))
            let temporary = directory + "/.\(name).partial-\(UInt32.random(in: 0...UInt32.max))"
            guard let file = BlockFile.create(temporary) else { return nil }
            files[chunk.fileId] = File(name: name, file: file, temporaryPath: temporary, size: chunk.size)
        }
        guard var current = files[chunk.fileId] else { return nil }
        // An ordered, reliable channel delivers chunks in order: a gap, or a file too large, ends it.
        guard chunk.index == current.nextIndex, current.received + UInt64(chunk.data.count) <= maxSize,
            (try? current.file.write(chunk.data)) != nil
        else {
            return abort(chunk.fileId, cancelled: false).map(Report.ended)
        }
        current.nextIndex += 1
        current.received += UInt64(chunk.data.count)
        current.digest.update(chunk.data)
        files[chunk.fileId] = current
        guard chunk.end else {
            return .progress(
                .init(name: current.name, bytes: current.received, total: current.size ?? 0, sending: false))
        }
        files[chunk.fileId] = nil
        current.file.close()
        let actual = Sha256.hex(current.digest.finish())
        // Complete, and matching the hash when the sender gave one (reference peers do not).
        let intact =
            (current.size.map { $0 == current.received } ?? true) && (chunk.sha256.map { $0 == actual } ?? true)
        let destination =
            intact ? try? FilePlacement.place(current.temporaryPath, in: directory, as: current.name) : nil
        // Removing a temporary file is tidying: one left behind is hidden (a dot name) and never read.
        if destination == nil { try? FileManager.default.removeItem(atPath: current.temporaryPath) }
        return .ended(
            .init(
                name: current.name, bytes: current.received, sha256: actual, ok: destination != nil,
                seconds: (ContinuousClock.now - current.started).inSeconds, path: destination,
                announcedBytes: current.size))
    }

    /// Ends every file under way (the channel closed, or either side cancelled).
    mutating func abortAll(cancelled: Bool) -> [FileTransferEndpoint.Outcome] {
        files.keys.sorted().compactMap { abort($0, cancelled: cancelled) }
    }

    private mutating func abort(_ fileId: String, cancelled: Bool) -> FileTransferEndpoint.Outcome? {
        guard let current = files.removeValue(forKey: fileId) else { return nil }
        current.file.close()
        try? FileManager.default.removeItem(atPath: current.temporaryPath)  // tidying, as above
        return .init(
            name: current.name, bytes: current.received, sha256: "", ok: false, seconds: 0, path: nil,
            cancelled: cancelled, announcedBytes: current.size)
    }
}
