import Foundation

/// The sending side of the binary file protocol (docs/file-protocol.md), as
/// a state machine with no I/O: the header (with the SHA-256 the endpoint
/// computed first), the bytes in blocks of `blockSize` while the buffer is
/// under the high-water mark, then the receiver's ack. An ack that says no
/// before the last byte is a refusal: the sender stops at once.
struct BinarySender {
    let name: String
    let size: UInt64
    let sha256: String
    let blockSize: Int
    /// Bytes handed to the channel.
    private(set) var sent: UInt64 = 0
    private var headerSent = false
    private var ack: FileMessage?
    private var ackTimedOut = false
    private var interruptions = SendInterruptions()

    init(name: String, size: UInt64, sha256: String, blockSize: Int = FileTransferEndpoint.chunkSize) {
        self.name = name
        self.size = size
        self.sha256 = sha256
        self.blockSize = blockSize
    }

    /// How long to wait for the ack after the last byte: the receiver has it
    /// once SCTP drains, so a minute plus a second per MB.
    var ackWait: Duration { .seconds(60) + .milliseconds(Int64(size / 1000)) }

    /// What to do now, with `buffered` bytes in the channel's send buffer.
    mutating func next(buffered: Int, highWater: Int = FileTransferEndpoint.highWater) -> SendStep {
        if !headerSent {
            headerSent = true
            return .send(FileMessage.header(name: name, size: size, sha256: sha256).json)
        }
        if sent < size {
            if case .ack(_, _, _, false)? = ack { return .finished(.failure(.refused)) }
            if let step = interruptions.check(name: name, buffered: buffered, highWater: highWater) { return step }
            return .bytes(Int(min(UInt64(blockSize), size - sent)))
        }
        if interruptions.cancelled { return .finished(.failure(.cancelled)) }
        guard case .ack(_, let bytes, let theirHash, let ok)? = ack else {
            if interruptions.closed { return .finished(.failure(.channelClosed)) }
            return ackTimedOut ? .finished(.failure(.noAcknowledgement(ackWait))) : .waitForAck
        }
        // A refusal (nothing taken, no hash), whether it came early or after the last byte.
        if !ok, bytes == 0, theirHash.isEmpty, size > 0 { return .finished(.failure(.refused)) }
        return .finished(
            .success(SendResult(bytes: bytes, sha256: theirHash, ok: ok && theirHash == sha256 && bytes == size)))
    }

    /// `count` bytes of the file went to the channel.
    mutating func sent(_ count: Int) {
        sent += UInt64(count)
    }

    /// The receiver's ack (before the last byte: a refusal, or a receive cut short).
    mutating func acknowledged(_ message: FileMessage) {
        if case .ack = message, ack == nil { ack = message }
    }

    /// This side or the peer cancelled.
    mutating func cancel() { interruptions.cancel() }
    /// The channel closed.
    mutating func channelClosed() { interruptions.close() }
    /// No ack came within `ackWait`.
    mutating func ackWaitEnded() { ackTimedOut = true }
}
