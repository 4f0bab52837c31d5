/// Files between friends over toxcore's file transfer (`Carrier+Files.swift`).

/// One transfer: the friend, the direction, and the file's SHA-256, which is
/// also toxcore's file id. The key stays the same when a transfer is cut and
/// offered again (after a disconnect or a restart of either side), which is
/// how it resumes from the bytes already on disk.
public struct FileTransferKey: Hashable, Sendable, CustomStringConvertible {
    /// The friend at the other end.
    public let friend: UserId
    /// The file's SHA-256 (also toxcore's file id).
    public let sha256: [UInt8]
    /// Whether we send it.
    public let outgoing: Bool

    /// A transfer's key.
    public init(friend: UserId, sha256: [UInt8], outgoing: Bool) {
        self.friend = friend
        self.sha256 = sha256
        self.outgoing = outgoing
    }

    /// The friend, the direction and the SHA-256's bytes in one piece (an
    /// array hashes element by element; toxcore's path looks a transfer up for
    /// every chunk). Equality still compares every field.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(friend)
        hasher.combine(outgoing)
        sha256.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// `out:` or `in:` and the first 16 hex digits of the SHA-256.
    public var description: String { (outgoing ? "out:" : "in:") + Hex.encode(Array(sha256.prefix(8))) }
    /// The SHA-256 in hex.
    public var sha256Hex: String { Hex.encode(sha256) }
}

/// A file a friend offers; answer with `Carrier.acceptFile` or `refuseFile`.
public struct FileOffer: Equatable, Sendable {
    /// The transfer.
    public var key: FileTransferKey
    /// Sanitised: one path component, no control characters, not hidden.
    public var name: String
    /// The file's size in bytes.
    public var size: UInt64

    /// An offer (`name` already made safe).
    public init(key: FileTransferKey, name: String, size: UInt64) {
        self.key = key
        self.name = name
        self.size = size
    }
}

/// What happens to a transfer, in order. Every transfer ends with exactly one
/// `.finished`; `.interrupted` is not an end: the transfer goes on when the
/// friend is back and the file is offered again.
public enum FileTransferEvent: Equatable, Sendable {
    case offered(FileOffer)
    /// The receiver took the file, starting at `offset` (more than 0 when it resumes).
    case accepted(FileTransferKey, offset: UInt64)
    /// Bytes written to disk (receiver) or handed to toxcore (sender), at most every 200 ms.
    case progress(FileTransferKey, bytes: UInt64, total: UInt64)
    case paused(FileTransferKey, byPeer: Bool)
    case resumed(FileTransferKey, byPeer: Bool)
    /// The link dropped; the bytes so far are kept and the transfer resumes from them.
    case interrupted(FileTransferKey, reason: String)
    case finished(FileTransferKey, FileTransferOutcome)

    /// The transfer the event is about.
    public var key: FileTransferKey {
        switch self {
        case .offered(let offer): offer.key
        case .accepted(let key, _), .progress(let key, _, _), .paused(let key, _), .resumed(let key, _),
            .interrupted(let key, _), .finished(let key, _):
            key
        }
    }
}

/// How a transfer ended.
public enum FileTransferOutcome: Equatable, Sendable {
    /// Received whole, size and SHA-256 checked, and stored at `path` (receiver);
    /// the receiver confirmed exactly that (sender, `path` nil).
    case completed(path: String?, bytes: UInt64)
    /// Ended by this side (`byPeer` false) or by the friend, with the reason given if any.
    case cancelled(byPeer: Bool, reason: String?)
    case failed(String)
}

/// A transfer as it stands (`Carrier.fileTransfers()`).
public struct FileTransferStatus: Equatable, Sendable {
    /// Where a transfer is.
    public enum Phase: String, Sendable {
        /// Outgoing: the friend is offline; the file is offered when it connects.
        case waitingForFriend
        /// Offered, not yet accepted or refused.
        case offered
        case transferring
        /// Cut by a disconnect; resumes when the file is offered again.
        case interrupted
        /// All bytes moved; the receiver is checking the SHA-256.
        case verifying
    }
    /// The transfer.
    public var key: FileTransferKey
    /// The file's name.
    public var name: String
    /// The file's size in bytes.
    public var size: UInt64
    /// Bytes moved so far.
    public var bytes: UInt64
    /// Where it is.
    public var phase: Phase
    /// Paused by this side (`pauseFile`).
    public var pausedByUs: Bool
    /// Paused by the friend.
    public var pausedByPeer: Bool
}

/// A transfer toxcore gave up to a direct session (`Carrier.handOverFile`).
public struct FileHandOver: Equatable, Sendable {
    /// The bytes toxcore had moved.
    public var bytes: UInt64
    /// For a file coming in: the directory it was accepted into, whose partial file the session resumes from.
    public var directory: String?

    /// A hand-over at `bytes`, into `directory` for a file coming in.
    public init(bytes: UInt64, directory: String?) {
        self.bytes = bytes
        self.directory = directory
    }
}
