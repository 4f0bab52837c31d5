import Foundation

/// What a file sender asks its endpoint to do next.
enum SendStep: Equatable {
    /// Send this protocol message; if the channel refuses it, the transfer ends (`channelClosed`).
    case send(String)
    /// Tell the peer this (a cancel); best effort: the transfer ends anyway.
    case tellPeer(String)
    /// Read up to this many bytes of the file and hand them over (`BinarySender.sent`, `ChunkedSender.chunk`).
    case bytes(Int)
    /// More than the high-water mark is buffered: wait until it drains (or something happens).
    case waitForDrain
    /// Everything is handed over: wait for the receiver's acknowledgement (binary protocol), at most `ackWait`.
    case waitForAck
    /// The transfer is over.
    case finished(Result<SendResult, FileTransferEndpoint.TransferError>)
}

/// How a sent file ended, as the receiver saw it (the endpoint adds the time taken).
struct SendResult: Equatable {
    var bytes: UInt64
    var sha256: String
    var ok: Bool
}

/// What stops a sender whichever protocol it speaks: a cancel (told to the
/// peer once, if bytes are still to go), the channel closing, a full buffer.
struct SendInterruptions {
    private(set) var cancelled = false
    private var cancelTold = false
    private(set) var closed = false

    mutating func cancel() { cancelled = true }
    mutating func close() { closed = true }

    /// The step that a cancel, a closed channel or a full buffer forces while bytes remain, if any.
    mutating func check(name: String, buffered: Int, highWater: Int) -> SendStep? {
        if cancelled {
            if cancelTold { return .finished(.failure(.cancelled)) }
            cancelTold = true
            return .tellPeer(CancelMessage.json(name: name))
        }
        if closed { return .finished(.failure(.channelClosed)) }
        return buffered > highWater ? .waitForDrain : nil
    }
}
