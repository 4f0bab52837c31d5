/// Receiving one file on a `carrier-friend-file/1` channel, as a state
/// machine with no I/O: the offer is read and checked, the application's
/// answer becomes `accept` at the bytes already on disk (or `refuse`), the
/// binary messages are placed in order from there, and once the last byte is
/// in the owner verifies the file and sends the verdict this returns.
public struct FriendFileReceiver: Sendable {
    /// What to do with a binary message.
    public enum Write: Equatable, Sendable {
        /// Write it at this position; `complete` once the file's last byte is in (verify then).
        case write(at: UInt64, complete: Bool)
        /// It breaks the protocol (before `accept`, or past the size): cancel with this reason.
        case violation(String)
    }

    /// What a control message from the sender means.
    public enum Notice: Equatable, Sendable {
        case paused
        case resumed
        case cancelled(String)
        /// It breaks the protocol: cancel with this reason.
        case violation(String)
    }

    /// The offered file: name as the sender gave it, size, SHA-256 (hex).
    public let name: String
    /// Its size in bytes.
    public let size: UInt64
    /// Its SHA-256 in hex, as offered.
    public let sha256: String
    /// The sender asks to carry on a transfer that toxcore has under way.
    public let continuing: Bool
    /// The next byte expected (what the partial file holds once accepted).
    public private(set) var position: UInt64 = 0
    /// The application took the file.
    public private(set) var accepted = false
    /// Who holds a pause.
    public private(set) var pauses = FriendFilePauses()
    /// The verdict went out: nothing more is expected.
    public private(set) var finished = false

    /// Reads the channel's first message: an offer within `maxSize`, or the reason to refuse it.
    public static func read(offer text: String, maxSize: UInt64) -> Result<FriendFileReceiver, OfferRefusal> {
        guard case .offer(let name, let size, let sha256, let continuing)? = FriendFileMessage(json: text) else {
            return .failure(OfferRefusal(reason: "the first message is not a file offer"))
        }
        guard size <= maxSize else {
            return .failure(OfferRefusal(reason: "the file is \(size) bytes, more than the \(maxSize) this node takes"))
        }
        return .success(FriendFileReceiver(name: name, size: size, sha256: sha256, continuing: continuing))
    }

    /// Why an offer is refused at once.
    public struct OfferRefusal: Error, Equatable, Sendable {
        /// Said to the sender.
        public let reason: String
        /// A refusal for this reason.
        public init(reason: String) { self.reason = reason }
    }

    private init(name: String, size: UInt64, sha256: String, continuing: Bool) {
        self.continuing = continuing
        self.name = name
        self.size = size
        self.sha256 = sha256
    }

    /// The application takes the file, of which `have` bytes are on disk
    /// already (a partial file from an earlier try over either path; more
    /// than the size means it is not this file's: start over).
    public mutating func accept(have: UInt64) -> FriendFileMessage {
        accepted = true
        position = have <= size ? have : 0
        return .accept(offset: position)
    }

    /// Whether the file is whole the moment it is accepted (every byte was on disk already).
    public var complete: Bool { accepted && position == size }

    /// A binary message of `count` bytes.
    public mutating func bytes(_ count: Int) -> Write {
        guard accepted, !finished else { return .violation("file bytes before the accept or after the verdict") }
        guard UInt64(count) <= size - position else { return .violation("more bytes than the offered \(size)") }
        let at = position
        position += UInt64(count)
        return .write(at: at, complete: position == size)
    }

    /// A control message from the sender.
    public mutating func received(_ message: FriendFileMessage) -> Notice? {
        switch message {
        case .pause:
            return pauses.peer(paused: true) ? .paused : nil
        case .resume:
            return pauses.peer(paused: false) ? .resumed : nil
        case .cancel(let reason):
            return .cancelled(reason)
        case .offer, .accept, .refuse, .verdict:
            return .violation("the sender sent a receiver's message or a second offer")
        }
    }

    /// This side pauses; the message to send, nil if already paused.
    public mutating func pause() -> FriendFileMessage? { pauses.pause() }

    /// This side resumes; the message to send, nil if it had not paused.
    public mutating func resume() -> FriendFileMessage? { pauses.resume() }

    /// The file is verified (or not): the verdict to send; nothing is expected after it.
    public mutating func verdict(ok: Bool, reason: String?) -> FriendFileMessage {
        finished = true
        return .verdict(ok: ok, reason: reason)
    }
}
