import CarrierNode

/// What an Express node keeps, in SQLite (WAL, `synchronous=FULL`: a
/// confirmed deposit survives a crash or a power cut): sealed messages per
/// recipient, the nonces of recent requests (replay protection) and the
/// node's own identity key. Time comes from the caller, so tests set it.
/// Not thread-safe: `ExpressService` serialises access.
final class ExpressStore {
    struct Limits: Sendable {
        /// Messages waiting for one recipient, and their bytes.
        var messagesPerRecipient = 1000
        var bytesPerRecipient = 64 << 20
        /// A message not pulled within this many seconds is deleted.
        var maxAgeSeconds: Int64 = 14 * 24 * 3600
    }

    enum Deposit: Equatable {
        case stored(seq: UInt64)
        /// The same sender stored the same message id before (a retried request).
        case duplicate
        case overQuota(String)
    }

    private let database: SQLiteDatabase
    let limits: Limits

    init(path: String?, limits: Limits) throws(SQLiteDatabase.Failure) {
        database = try SQLiteDatabase(path: path ?? ":memory:")
        self.limits = limits
        if path != nil { try database.execute("PRAGMA journal_mode=WAL") }
        try database.execute(
            """
            PRAGMA synchronous=FULL;
            CREATE TABLE IF NOT EXISTS messages(
              seq INTEGER PRIMARY KEY AUTOINCREMENT, recipient BLOB NOT NULL, sender BLOB NOT NULL,
              message_id BLOB NOT NULL, stored_at INTEGER NOT NULL, body BLOB NOT NULL,
              UNIQUE(recipient, sender, message_id));
            CREATE INDEX IF NOT EXISTS messages_by_recipient ON messages(recipient, seq);
            CREATE TABLE IF NOT EXISTS nonces(
              user BLOB NOT NULL, nonce TEXT NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY(user, nonce));
            CREATE TABLE IF NOT EXISTS identity(id INTEGER PRIMARY KEY CHECK (id = 1), secret BLOB NOT NULL);
            """)
    }

    /// The node's secret key, made on first use.
    func identitySecret(makeNew: () -> [UInt8]) throws(SQLiteDatabase.Failure) -> [UInt8] {
        if let secret = try database.query("SELECT secret FROM identity WHERE id = 1").first?.first?.blob,
            secret.count == 32
        {
            return secret
        }
        let secret = makeNew()
        try database.query("INSERT OR REPLACE INTO identity(id, secret) VALUES(1, ?)", [.blob(secret)])
        return secret
    }

    func deposit(recipient: UserId, sender: UserId, messageId: [UInt8], body: [UInt8], now: Int64)
        throws(SQLiteDatabase.Failure) -> Deposit
    {
        try database.transaction { () throws(SQLiteDatabase.Failure) -> Deposit in
            let existing = try database.query(
                "SELECT 1 FROM messages WHERE recipient = ? AND sender = ? AND message_id = ?",
                [.blob(recipient.publicKey), .blob(sender.publicKey), .blob(messageId)])
            if !existing.isEmpty { return .duplicate }
            let usage = try database.query(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM messages WHERE recipient = ?",
                [.blob(recipient.publicKey)])
            let count = Int(usage.first?[0].integer ?? 0)
            let bytes = Int(usage.first?[1].integer ?? 0)
            if count + 1 > limits.messagesPerRecipient {
                return .overQuota("the recipient has \(count) messages waiting, at most \(limits.messagesPerRecipient)")
            }
            if bytes + body.count > limits.bytesPerRecipient {
                return .overQuota("the recipient's waiting messages would pass \(limits.bytesPerRecipient) bytes")
            }
            try database.query(
                "INSERT INTO messages(recipient, sender, message_id, stored_at, body) VALUES(?, ?, ?, ?, ?)",
                [.blob(recipient.publicKey), .blob(sender.publicKey), .blob(messageId), .integer(now), .blob(body)])
            let seq = try database.query("SELECT last_insert_rowid()").first?.first?.integer ?? 0
            return .stored(seq: UInt64(seq))
        }
    }

    /// The recipient's records after `seq`, oldest first, up to `maxCount`
    /// records and about `maxBytes`; and whether more wait.
    func messages(for recipient: UserId, after seq: UInt64, maxCount: Int, maxBytes: Int)
        throws(SQLiteDatabase.Failure) -> (records: [ExpressProtocol.Record], more: Bool)
    {
        let rows = try database.query(
            "SELECT seq, sender, stored_at, body FROM messages WHERE recipient = ? AND seq > ? ORDER BY seq LIMIT ?",
            [.blob(recipient.publicKey), .integer(Int64(clamping: seq)), .integer(Int64(maxCount + 1))])
        var records: [ExpressProtocol.Record] = []
        var bytes = 0
        for row in rows {
            guard let seq = row[0].integer, let senderKey = row[1].blob, let sender = UserId(publicKey: senderKey),
                let storedAt = row[2].integer, let body = row[3].blob
            else { continue }
            if records.count == maxCount || (!records.isEmpty && bytes + body.count > maxBytes) {
                return (records, true)
            }
            records.append(
                ExpressProtocol.Record(seq: UInt64(seq), sender: sender, storedAt: UInt64(storedAt), sealed: body))
            bytes += body.count
        }
        return (records, false)
    }

    /// Deletes the recipient's records up to and with `seq`; returns how many.
    func delete(for recipient: UserId, through seq: UInt64) throws(SQLiteDatabase.Failure) -> Int {
        try database.query(
            "DELETE FROM messages WHERE recipient = ? AND seq <= ?",
            [.blob(recipient.publicKey), .integer(Int64(clamping: seq))])
        return database.changes
    }

    /// Drops messages older than the age limit and nonces past their expiry.
    func purge(now: Int64) throws(SQLiteDatabase.Failure) {
        try database.query("DELETE FROM messages WHERE stored_at < ?", [.integer(now - limits.maxAgeSeconds * 1000)])
        try database.query("DELETE FROM nonces WHERE expires < ?", [.integer(now)])
    }

    /// Records a request's nonce; false if this user used it before (a replay).
    func rememberNonce(user: UserId, nonce: String, expires: Int64) throws(SQLiteDatabase.Failure) -> Bool {
        try database.query(
            "INSERT OR IGNORE INTO nonces(user, nonce, expires) VALUES(?, ?, ?)",
            [.blob(user.publicKey), .text(nonce), .integer(expires)])
        return database.changes == 1
    }
}
