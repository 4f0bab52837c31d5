/// What a file endpoint reports: progress, how each file ended, and why one could not be sent.
extension FileTransferEndpoint {
    /// How far a transfer is, reported as it goes.
    public struct Progress: Sendable {
        /// The file's name, as offered.
        public var name: String
        /// Bytes done so far.
        public var bytes: UInt64
        /// The file's size.
        public var total: UInt64
        /// Whether we send it (or receive it).
        public var sending: Bool
    }

    /// How a transfer ended: exactly one per file, on both sides.
    public struct Outcome: Sendable, Equatable {
        /// The file's name, as offered.
        public var name: String
        /// Bytes transferred.
        public var bytes: UInt64
        /// The SHA-256 of what was transferred, hex.
        public var sha256: String
        /// Whether the receiver has the whole file with the sender's hash.
        public var ok: Bool
        /// From the offer to the end.
        public var seconds: Double
        /// Where a received file was saved (nil when sent, or when it failed).
        public var path: String?
        /// One side cancelled the transfer.
        public var cancelled = false
        /// The size the sender announced, when one came (received files).
        public var announcedBytes: UInt64?

        /// Fewer bytes arrived than were announced: the transfer was cut short
        /// (a closed channel, a lost connection), which is not a hash mismatch.
        public var isIncomplete: Bool { announcedBytes.map { bytes < $0 } ?? false }

        /// How it ended, in words: "sha256 ok", "incomplete: 1200 of 5000 bytes", "cancelled", "sha256 MISMATCH".
        public var verdict: String {
            if ok { return "sha256 ok" }
            if cancelled { return "cancelled after \(bytes) bytes" }
            if isIncomplete, let announcedBytes { return "incomplete: \(bytes) of \(announcedBytes) bytes" }
            return "sha256 MISMATCH"
        }
    }

    /// Why a file could not be sent.
    public enum TransferError: Error, Equatable, Sendable, CustomStringConvertible {
        case busy
        case unreadable(String)
        case channelClosed
        case protocolViolation(String)
        case cancelled
        /// The receiver said no at once (no receive directory, too large, busy).
        case refused
        /// No acknowledgement came within a time that scales with the size.
        case noAcknowledgement(Duration)

        /// What went wrong, in words for a log or a user.
        public var description: String {
            switch self {
            case .cancelled: "the transfer was cancelled"
            case .refused: "the receiver refused the file (it takes no files, the file is too large, or it is busy)"
            case .noAcknowledgement(let wait): "no acknowledgement from the receiver within \(wait)"
            case .busy: "a file is already being sent on this channel"
            case .unreadable(let why): "cannot read the file: \(why)"
            case .channelClosed: "the data channel closed before the transfer finished"
            case .protocolViolation(let why): "file protocol: \(why)"
            }
        }
    }
}
