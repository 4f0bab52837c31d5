import FileSafety
import Foundation

/// The sending side of the reference peers' JSON chunks (`ChunkMessage`): the
/// file as base64 text messages, paced like the binary protocol, the name and
/// size on the first, the SHA-256 on the last. The format has no
/// acknowledgement: the file is sent once every chunk is handed over.
struct ChunkedSender {
    let name: String
    let size: UInt64
    let mime: String
    let fileId: String
    /// Bytes handed to the channel.
    private(set) var sent: UInt64 = 0
    private var index = 0
    private let digest = Sha256()
    private var sha256: String?
    private var interruptions = SendInterruptions()

    init(name: String, size: UInt64, mime: String, fileId: String = UUID().uuidString.lowercased()) {
        self.name = name
        self.size = size
        self.mime = mime
        self.fileId = fileId
    }

    /// What to do now, with `buffered` bytes in the channel's send buffer.
    mutating func next(buffered: Int, highWater: Int = FileTransferEndpoint.highWater) -> SendStep {
        if let sha256 { return .finished(.success(SendResult(bytes: sent, sha256: sha256, ok: sent == size))) }
        if let step = interruptions.check(name: name, buffered: buffered, highWater: highWater) { return step }
        return .bytes(ChunkMessage.chunkSize)
    }

    /// The next block read from the file (empty: it ended), as the chunk message to send.
    mutating func chunk(_ block: [UInt8]) -> String {
        digest.update(block)
        sent += UInt64(block.count)
        let last = sent >= size || block.isEmpty
        var chunk = ChunkMessage(
            fileId: fileId, index: index, mime: mime, end: last, data: block, name: index == 0 ? name : nil,
            size: index == 0 ? size : nil)
        if last {
            let hash = Sha256.hex(digest.finish())
            sha256 = hash
            chunk.sha256 = hash
        }
        index += 1
        return chunk.json
    }

    /// Whether the last chunk went out.
    var isComplete: Bool { sha256 != nil }

    /// This side or the peer cancelled.
    mutating func cancel() { interruptions.cancel() }
    /// The channel closed.
    mutating func channelClosed() { interruptions.close() }
}
