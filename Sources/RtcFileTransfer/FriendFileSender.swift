/// Sending one file on a `carrier-friend-file/1` channel, as a state machine
/// with no I/O: the offer, the receiver's answer, the bytes from the accepted
/// offset (while the channel's buffer is under the high-water mark and
/// neither side has paused), then the receiver's verdict.
///
/// The owner asks `next(buffered:)` what to do, does it, and feeds back what
/// happened: bytes handed to the channel, the peer's messages, the channel
/// closing, this side's pause or cancel, the verdict's wait running out.
public struct FriendFileSender: Sendable {
    /// What to do now.
    public enum Step: Equatable, Sendable {
        /// Send this control message.
        case send(FriendFileMessage)
        /// Read `count` bytes of the file at `position` and send them as one binary message.
        case bytes(at: UInt64, count: Int)
        /// Nothing until something happens: the answer, a drain, a resume, the verdict.
        case wait
        /// The transfer is over on this channel.
        case finished(Outcome)
    }

    /// How the transfer ended on this channel.
    public enum Outcome: Equatable, Sendable {
        /// The receiver has the whole file, size and SHA-256 checked.
        case confirmed
        /// The receiver took the bytes but the file did not check out or could not be stored.
        case rejected(String)
        /// The receiver did not take the file.
        case refused(String)
        case cancelled(byPeer: Bool, reason: String)
        /// The peer broke the protocol, or the verdict never came; the peer was told (`cancel`).
        case failed(String)
        /// The channel closed before the verdict: before any answer (`answered`
        /// false: the peer may not speak the protocol, or the path broke at
        /// once) or part-way. The receiver keeps what it has.
        case interrupted(answered: Bool)
    }

    /// What the peer's message changed, for the owner's events.
    public enum Notice: Equatable, Sendable {
        case accepted(offset: UInt64)
        case paused
        case resumed
    }

    /// The file.
    public let name: String
    /// Its size in bytes.
    public let size: UInt64
    /// Its SHA-256 in hex.
    public let sha256: String
    /// The largest binary message.
    public let blockSize: Int
    /// The offer carries on a transfer toxcore has under way (`FriendFileMessage.offer`'s `continuing`).
    public let continuing: Bool
    /// The offset the receiver accepted at, once it answered.
    public private(set) var acceptedOffset: UInt64?
    /// The next byte to send.
    public private(set) var position: UInt64 = 0
    /// Who holds a pause.
    public private(set) var pauses = FriendFilePauses()
    private var offerSent = false
    private var refusal: String?
    private var peerCancel: String?
    private var ourCancel: String?
    private var failure: String?
    private var cancelTold = false
    private var verdict: (ok: Bool, reason: String?)?
    private var closed = false

    /// A sender for this file (`sha256` in hex); `continuing` for one toxcore is carrying already.
    public init(name: String, size: UInt64, sha256: String, continuing: Bool = false, blockSize: Int = 64 * 1024) {
        self.continuing = continuing
        self.name = name
        self.size = size
        self.sha256 = sha256
        self.blockSize = blockSize
    }

    /// How long to wait for the verdict after the last byte: the receiver
    /// hashes the whole file first (about a second per 500 MB), so a minute
    /// plus a second per 10 MB.
    public var verdictWait: Duration { .seconds(60) + .milliseconds(Int64(min(size / 10_000, 1 << 40))) }

    /// Whether every byte went to the channel.
    public var allSent: Bool { acceptedOffset != nil && position == size }

    /// What to do now, with `buffered` bytes queued in the channel.
    public mutating func next(buffered: Int, highWater: Int = 4 << 20) -> Step {
        if !offerSent {
            offerSent = true
            return .send(.offer(name: name, size: size, sha256: sha256, continuing: continuing))
        }
        if let reason = failure ?? ourCancel {
            if !cancelTold, !closed {
                cancelTold = true
                return .send(.cancel(reason: reason))
            }
            return .finished(failure != nil ? .failed(reason) : .cancelled(byPeer: false, reason: reason))
        }
        if let refusal { return .finished(.refused(refusal)) }
        if let peerCancel { return .finished(.cancelled(byPeer: true, reason: peerCancel)) }
        if let verdict {
            if verdict.ok, allSent { return .finished(.confirmed) }
            return .finished(.rejected(verdict.reason ?? (verdict.ok ? "a verdict before the last byte" : "rejected")))
        }
        if closed { return .finished(.interrupted(answered: acceptedOffset != nil)) }
        guard acceptedOffset != nil, position < size, !pauses.any, buffered <= highWater else {
            return .wait
        }
        return .bytes(at: position, count: Int(min(UInt64(blockSize), size - position)))
    }

    /// `count` bytes from `position` went to the channel.
    public mutating func sent(_ count: Int) {
        position += UInt64(count)
    }

    /// A control message from the receiver.
    public mutating func received(_ message: FriendFileMessage) -> Notice? {
        switch message {
        case .accept(let offset):
            guard acceptedOffset == nil, refusal == nil else {
                failure = failure ?? "the receiver accepted twice"
                return nil
            }
            guard offset <= size else {
                failure = failure ?? "the receiver accepted at \(offset), past the file's \(size) bytes"
                return nil
            }
            acceptedOffset = offset
            position = offset
            return .accepted(offset: offset)
        case .refuse(let reason):
            if acceptedOffset == nil { refusal = refusal ?? reason } else { peerCancel = peerCancel ?? reason }
        case .cancel(let reason):
            peerCancel = peerCancel ?? reason
        case .pause:
            return pauses.peer(paused: true) ? .paused : nil
        case .resume:
            return pauses.peer(paused: false) ? .resumed : nil
        case .verdict(let ok, let reason):
            if verdict == nil { verdict = (ok, reason) }
        case .offer:
            failure = failure ?? "the receiver sent an offer"
        }
        return nil
    }

    /// Binary bytes from the receiver: the protocol has none that way.
    public mutating func receivedBytes() {
        failure = failure ?? "the receiver sent file bytes"
    }

    /// This side pauses; returns the message to send, nil if already paused.
    public mutating func pause() -> FriendFileMessage? { pauses.pause() }

    /// This side resumes; returns the message to send, nil if it had not paused.
    public mutating func resume() -> FriendFileMessage? { pauses.resume() }

    /// This side cancels (told to the peer by the next step).
    public mutating func cancel(reason: String) {
        if ourCancel == nil { ourCancel = reason }
    }

    /// The channel closed.
    public mutating func channelClosed() { closed = true }

    /// No verdict came within `verdictWait` after the last byte.
    public mutating func verdictWaitEnded() {
        if verdict == nil { failure = failure ?? "no verdict from the receiver within \(verdictWait)" }
    }
}
