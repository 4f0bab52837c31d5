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

    /// Stores one sealed message, unless the same sender stored the same id
    /// before or the recipient's quota is full.
    func deposit(recipient: UserId, sender: UserId, messageId: [UInt8], body: [UInt8], now: Int64)
        throws(DatabaseFailure) -> DepositResult

    /// The recipient's unclaimed records after `seq`, oldest first, up to
    /// `maxCount` records and about `maxBytes`; they are claimed for
    /// `limits.pullLeaseMilliseconds`, so a pull through another node at the
    /// same moment does not hand them out too.
    func pull(for recipient: UserId, after seq: UInt64, maxCount: Int, maxBytes: Int, now: Int64)
        throws(DatabaseFailure) -> PulledBatch

    /// Deletes the recipient's records up to and with `seq` that a pull
    /// handed out; returns how many. One that no pull handed out yet (a pull
    /// through another node skipped it while it was locked) stays.
    func delete(for recipient: UserId, through seq: UInt64) throws(DatabaseFailure) -> Int

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

/// What one recipient may keep, and how long a pull holds its records.
struct StoreLimits: Sendable {
    /// Messages waiting for one recipient, and their bytes.
    var messagesPerRecipient = 1000
    var bytesPerRecipient = 64 << 20
    /// A message not pulled within this many seconds is deleted.
    var maxAgeSeconds: Int64 = 14 * 24 * 3600
    /// A pulled record is not handed out again for this long unless deleted
    /// (the puller crashed or lost the answer: then it comes again).
    var pullLeaseMilliseconds: Int64 = 30_000

    /// Why one more message of `size` bytes would pass the recipient's quota, or nil.
    func refusal(waiting count: Int, bytes: Int, adding size: Int) -> String? {
        if count + 1 > messagesPerRecipient {
            return "the recipient has \(count) messages waiting, at most \(messagesPerRecipient)"
        }
        if bytes + size > bytesPerRecipient {
            return "the recipient's waiting messages would pass \(bytesPerRecipient) bytes"
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

/// What became of a deposit.
enum DepositResult: Equatable {
    case stored(seq: UInt64)
    /// The same sender stored the same message id before (a retried request).
    case duplicate
    case overQuota(String)
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
