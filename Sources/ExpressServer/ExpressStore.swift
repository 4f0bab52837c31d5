import CarrierNode

/// What an Express node keeps: sealed messages per recipient, the nonces of
/// recent requests (replay protection) and the node's own identity key.
/// Two stores keep it: `SQLiteExpressStore` (embedded, one node) and
/// `PostgresExpressStore` (several nodes on one database acting as one).
/// Every method is one transaction and is safe to call from any thread; time
/// comes from the caller (milliseconds since 1970), so tests set it.
protocol ExpressStore: AnyObject, Sendable {
    var limits: StoreLimits { get }

    /// The node's secret key, made on first use; every node on one database
    /// gets the same one.
    func identitySecret(makeNew: () -> [UInt8]) throws(DatabaseFailure) -> [UInt8]

    /// Stores one sealed message or friend request, unless the same sender
    /// stored the same id before or a quota (`StoreLimits`) is full.
    func deposit(
        recipient: UserId, sender: UserId, messageId: [UInt8], body: [UInt8], kind: DepositKind, now: Int64
    ) throws(DatabaseFailure) -> DepositResult

    /// Replaces the recipient's registered contacts (`ExpressContact`).
    func setContacts(for recipient: UserId, _ contacts: [[UInt8]]) throws(DatabaseFailure)

    /// Whether the recipient registered `contact`.
    func hasContact(_ contact: [UInt8], for recipient: UserId) throws(DatabaseFailure) -> Bool

    /// Whether `user` keeps its mailbox here: it registered contacts.
    func hasMailbox(_ user: UserId) throws(DatabaseFailure) -> Bool

    /// The recipient's unclaimed records after `seq`, oldest first, up to
    /// `maxCount` records and about `maxBytes`; they are claimed for
    /// `limits.pullLeaseMilliseconds`, so a pull through another node at the
    /// same moment does not hand them out too.
    /// Only the records deposited through `api` (ours, or Carrier's).
    func pull(
        for recipient: UserId, after seq: UInt64, maxCount: Int, maxBytes: Int, now: Int64, api: DepositKind.Api
    ) throws(DatabaseFailure) -> PulledBatch

    /// Deletes the recipient's records up to and with `seq` that a pull
    /// handed out; returns how many. One that no pull handed out yet (a pull
    /// through another node skipped it while it was locked) stays.
    func delete(for recipient: UserId, through seq: UInt64, api: DepositKind.Api) throws(DatabaseFailure) -> Int

    /// Deletes the recipient's records deposited through Carrier's API and
    /// stored at or before `storedAt` (ms): Carrier's `DELETE ?until=`.
    func deleteCarrier(for recipient: UserId, storedUpTo storedAt: Int64) throws(DatabaseFailure) -> Int

    /// Drops messages older than the age limit and nonces past their expiry
    /// (on one node at a time; the others skip it).
    func purge(now: Int64) throws(DatabaseFailure)

    /// Records a request's nonce; false if this user used it before (a replay).
    func rememberNonce(user: UserId, nonce: String, expires: Int64) throws(DatabaseFailure) -> Bool

    /// The schema version the database is at (`ExpressSchema.migrations`).
    func schemaVersion() throws(DatabaseFailure) -> Int

    /// Lets go of the database (connections, file handles).
    func close()
}

/// What one recipient, one sender and the whole node may keep, and how long
/// a pull holds its records.
struct StoreLimits: Sendable {
    /// Messages waiting for one recipient, and their bytes.
    var messagesPerRecipient = 1000
    var bytesPerRecipient = 64 << 20
    /// Friend requests waiting for one recipient (apart from its messages).
    var requestsPerRecipient = 100
    /// Records one sender has waiting, over every recipient, and their bytes.
    var recordsPerSender = 2000
    var bytesPerSender = 128 << 20
    /// Bytes the node keeps in all; past it deposits get 507.
    var bytesPerNode: Int64 = 2 << 30
    /// A message not pulled within this many seconds is deleted.
    var maxAgeSeconds: Int64 = 14 * 24 * 3600
    /// A pulled record is not handed out again for this long unless deleted
    /// (the puller crashed or lost the answer: then it comes again).
    var pullLeaseMilliseconds: Int64 = 30_000

    /// What is stored now that a deposit is judged by.
    struct Usage: Equatable {
        /// Records of the deposit's kind waiting for the recipient, and their bytes.
        var recipientCount = 0
        var recipientBytes = 0
        /// The same sender stored the same id for the recipient before.
        var duplicate = false
        /// A friend request from the same sender waits for the recipient.
        var requestWaiting = false
        /// Records the sender has waiting anywhere, and their bytes.
        var senderCount = 0
        var senderBytes = 0
        /// Bytes the node keeps in all.
        var nodeBytes: Int64 = 0
    }

    /// What a deposit of `size` bytes and `kind` becomes, or nil if it may be stored.
    func refusal(_ usage: Usage, kind: DepositKind, adding size: Int) -> DepositResult? {
        if usage.duplicate { return .duplicate }
        if usage.nodeBytes + Int64(size) > bytesPerNode {
            return .full("this Express node is full (\(bytesPerNode >> 20) MiB kept); try another node")
        }
        if usage.senderCount + 1 > recordsPerSender {
            return .overQuota(
                "you have \(usage.senderCount) messages waiting on this node, at most \(recordsPerSender)")
        }
        if usage.senderBytes + size > bytesPerSender {
            return .overQuota("your waiting messages on this node would pass \(bytesPerSender) bytes")
        }
        switch kind {
        case .request, .carrierRequest:
            if usage.requestWaiting { return .overQuota("a friend request of yours already waits for the recipient") }
            if usage.recipientCount + 1 > requestsPerRecipient {
                return .overQuota(
                    "the recipient has \(usage.recipientCount) friend requests waiting, at most \(requestsPerRecipient)"
                )
            }
        case .message, .carrierMessage:
            if usage.recipientCount + 1 > messagesPerRecipient {
                return .overQuota(
                    "the recipient has \(usage.recipientCount) messages waiting, at most \(messagesPerRecipient)")
            }
            if usage.recipientBytes + size > bytesPerRecipient {
                return .overQuota("the recipient's waiting messages would pass \(bytesPerRecipient) bytes")
            }
        }
        return nil
    }

    /// Which of the candidate records (in order, sizes known, at most
    /// `maxCount + 1`) one pull hands out: up to `maxCount`, and about
    /// `maxBytes` (always at least one); and whether more wait.
    static func window(sizes: [Int], maxCount: Int, maxBytes: Int) -> (count: Int, more: Bool) {
        var bytes = 0
        for (index, size) in sizes.enumerated() {
            if index == maxCount || (index > 0 && bytes + size > maxBytes) { return (index, true) }
            bytes += size
        }
        return (sizes.count, false)
    }
}

/// What a deposit holds: a message (for a sender the recipient registered)
/// or a friend request (from anyone, small).
enum DepositKind: Int64, Sendable {
    case message = 0
    case request = 1
    /// The same, deposited through Carrier's API (`CarrierExpressApi`):
    /// kept apart, since each API hands back only its own.
    case carrierMessage = 2
    case carrierRequest = 3

    /// Which HTTP API a record came through, and goes out through.
    enum Api: Sendable {
        case ours, carrier

        /// The kinds it stores, as SQL (`kind IN (…)`).
        var sqlKinds: String { self == .ours ? "(0, 1)" : "(2, 3)" }
    }

    /// The friend-request kind of the same API.
    var requestKind: DepositKind { self == .message || self == .request ? .request : .carrierRequest }
    var isRequest: Bool { self == .request || self == .carrierRequest }
}

/// What became of a deposit.
enum DepositResult: Equatable {
    case stored(seq: UInt64)
    /// The same sender stored the same message id before (a retried request).
    case duplicate
    /// A recipient's or a sender's quota (429).
    case overQuota(String)
    /// The node's total (507).
    case full(String)
}

/// One pull's records, and whether more wait.
struct PulledBatch {
    var records: [ExpressProtocol.Record]
    var more: Bool
}

extension ExpressProtocol.Record {
    /// A record from a row of `seq, sender, stored_at, body`, as both stores
    /// select it; nil for a row that does not hold one.
    init?(row: [DatabaseValue?]) {
        guard row.count == 4, let seq = row[0]?.integer, let senderKey = row[1]?.blob,
            let sender = UserId(publicKey: senderKey), let storedAt = row[2]?.integer, let body = row[3]?.blob
        else { return nil }
        self.init(seq: UInt64(seq), sender: sender, storedAt: UInt64(storedAt), sealed: body)
    }
}
