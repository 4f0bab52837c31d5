/// Puts Carrier's fragments (`bulkmsg`, `invitereq`, `invitersp`) back
/// together, one transfer per sender, kind and `tid`, bounded in what a
/// sender can make it hold. Pure: the time comes in.
///
/// The rules are the reference receiver's (wire notes §2.3, §3.1): the first
/// fragment says the whole size (`totalsz`, 1 to the kind's limit), the
/// others follow in order (toxcore's friend messages are ordered), each 1 to
/// the fragment size, never past the whole. On top: at most
/// `maxPerSender` transfers a sender and `maxTransfers` in all, and a
/// transfer with nothing new for `timeout` is dropped.
public struct CarrierReassembler<Sender: Hashable & Sendable>: Sendable {
    /// What a fragment belongs to.
    public enum Kind: Sendable, Hashable { case bulk, invite, reply }

    /// A whole message, invite or reply.
    public struct Whole: Equatable, Sendable {
        /// Who sent it.
        public var sender: Sender
        /// A bulk message, an invite or a reply.
        public var kind: Kind
        /// The extension it went to, if any.
        public var ext: String?
        /// The first fragment's bundle (invites and replies).
        public var bundle: String?
        /// The transfer id the fragments shared.
        public var tid: Int64
        /// The whole data.
        public var data: [UInt8]
    }

    /// What became of a fragment.
    public enum Outcome: Equatable, Sendable {
        case whole(Whole)
        /// Kept; more must come.
        case pending
        /// Not kept, and why (its transfer, if any, is dropped too).
        case dropped(String)
    }

    private struct Key: Hashable, Sendable {
        var sender: Sender
        var kind: Kind
        var tid: Int64
    }

    private struct Transfer: Sendable {
        var ext: String?
        var bundle: String?
        var total: Int
        var data: [UInt8]
        var last: ContinuousClock.Instant
    }

    /// Transfers one sender may have open, and all senders together.
    public let maxPerSender: Int
    /// (See `maxPerSender`.)
    public let maxTransfers: Int
    /// What the open transfers' wholes may claim together: a whole is
    /// counted from its first fragment, so a sender cannot claim 5 MiB a
    /// transfer across many senders without bound.
    public let maxBufferedBytes: Int
    /// A transfer with no fragment for this long is dropped.
    public let timeout: Duration
    private var transfers: [Key: Transfer] = [:]
    private var claimed = 0

    /// A reassembler with these bounds (the reference's timeout is 60 s).
    public init(
        maxPerSender: Int = 8, maxTransfers: Int = 256, maxBufferedBytes: Int = 64 << 20,
        timeout: Duration = .seconds(60)
    ) {
        self.maxPerSender = maxPerSender
        self.maxTransfers = maxTransfers
        self.maxBufferedBytes = maxBufferedBytes
        self.timeout = timeout
    }

    /// Transfers open now.
    public var openTransfers: Int { transfers.count }

    /// One fragment from `sender` at `now`.
    public mutating func take(
        _ fragment: CarrierPacket.Fragment, kind: Kind, from sender: Sender, now: ContinuousClock.Instant
    )
        -> Outcome
    {
        expire(now: now)
        let key = Key(sender: sender, kind: kind, tid: fragment.tid)
        let unit = kind == .bulk ? CarrierLimits.maxMessage : CarrierLimits.inviteFragment
        let limit = kind == .bulk ? CarrierLimits.maxBulkMessage : CarrierLimits.maxInviteData
        guard (1...unit).contains(fragment.data.count) else {
            remove(key)
            return .dropped("a fragment of \(fragment.data.count) bytes: 1 to \(unit)")
        }
        if fragment.totalSize != 0 {
            // A first fragment (again: the sender started over).
            remove(key)
            let total = Int(fragment.totalSize)
            guard total <= limit else { return .dropped("a whole of \(total) bytes, at most \(limit)") }
            guard total > fragment.data.count else {
                guard total == fragment.data.count else { return .dropped("a first fragment past its whole") }
                return .whole(
                    Whole(
                        sender: sender, kind: kind, ext: fragment.ext, bundle: fragment.bundle, tid: fragment.tid,
                        data: fragment.data))
            }
            guard transfers.count < maxTransfers else { return .dropped("\(maxTransfers) transfers open already") }
            guard transfers.keys.filter({ $0.sender == sender }).count < maxPerSender else {
                return .dropped("\(maxPerSender) transfers from this sender open already")
            }
            guard claimed + total <= maxBufferedBytes else {
                return .dropped("open transfers claim \(claimed) bytes; \(total) more is past \(maxBufferedBytes)")
            }
            claimed += total
            transfers[key] = Transfer(
                ext: fragment.ext, bundle: fragment.bundle, total: total, data: fragment.data, last: now)
            return .pending
        }
        guard var transfer = transfers[key] else { return .dropped("a fragment whose first never came") }
        guard transfer.data.count + fragment.data.count <= transfer.total else {
            remove(key)
            return .dropped("fragments past the whole of \(transfer.total) bytes")
        }
        transfer.data += fragment.data
        transfer.last = now
        guard transfer.data.count == transfer.total else {
            transfers[key] = transfer
            return .pending
        }
        remove(key)
        return .whole(
            Whole(
                sender: sender, kind: kind, ext: transfer.ext, bundle: transfer.bundle, tid: fragment.tid,
                data: transfer.data))
    }

    /// Drops transfers with nothing new for `timeout`; returns how many.
    @discardableResult
    public mutating func expire(now: ContinuousClock.Instant) -> Int {
        let stale = transfers.filter { now - $0.value.last > timeout }.keys
        for key in stale { remove(key) }
        return stale.count
    }

    /// Forgets a sender's transfers (it went offline, or is no friend any more).
    public mutating func forget(_ sender: Sender) {
        for key in transfers.keys where key.sender == sender { remove(key) }
    }

    private mutating func remove(_ key: Key) {
        if let transfer = transfers.removeValue(forKey: key) { claimed -= transfer.total }
    }
}
