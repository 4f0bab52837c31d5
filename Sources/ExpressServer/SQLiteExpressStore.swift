import CarrierNode
import Foundation

/// The embedded store: one SQLite file (WAL, `synchronous=FULL`: a confirmed
/// deposit survives a crash or a power cut), or memory for tests. One node
/// only: SQLite has one writer, so a lock serialises every call, and claims
/// and quotas need nothing more.
final class SQLiteExpressStore: ExpressStore, @unchecked Sendable {
    let limits: StoreLimits
    private let database: SQLiteDatabase
    private let total = NodeTotal()
    private let lock = NSLock()

    /// Opens (creating, migrating) the file at `path`; nil keeps it in memory.
    init(path: String?, limits: StoreLimits) throws(DatabaseFailure) {
        database = try SQLiteDatabase(path: path ?? ":memory:")
        self.limits = limits
        if path != nil { try database.execute("PRAGMA journal_mode=WAL") }
        try database.execute("PRAGMA synchronous=FULL")
        try migrate()
    }

    private func migrate() throws(DatabaseFailure) {
        let current = try schemaVersion()
        for migration in ExpressSchema.migrations where migration.version > current {
            try database.transaction { () throws(DatabaseFailure) in
                try database.execute(migration.sqlite)
                try database.execute("PRAGMA user_version = \(migration.version)")
            }
        }
    }

    func schemaVersion() throws(DatabaseFailure) -> Int {
        Int(try database.query("PRAGMA user_version").first?.first?.integer ?? 0)
    }

    func identitySecret(makeNew: () -> [UInt8]) throws(DatabaseFailure) -> [UInt8] {
        try serialised { () throws(DatabaseFailure) in
            if let secret = try database.query("SELECT secret FROM identity WHERE id = 1").first?.first?.blob,
                secret.count == 32
            {
                return secret
            }
            let secret = makeNew()
            try database.query("INSERT OR REPLACE INTO identity(id, secret) VALUES(1, ?)", [.blob(secret)])
            return secret
        }
    }

    func deposit(
        recipient: UserId, sender: UserId, messageId: [UInt8], body: [UInt8], kind: DepositKind, now: Int64
    ) throws(DatabaseFailure) -> DepositResult {
        try serialised { () throws(DatabaseFailure) in
            let nodeBytes = try total.current(now: now) { () throws(DatabaseFailure) -> Int64 in
                try database.query("SELECT COALESCE(SUM(size), 0) FROM messages").first?.first?.integer ?? 0
            }
            let result = try database.transaction { () throws(DatabaseFailure) -> DepositResult in
                let (to, from) = (DatabaseValue.blob(recipient.publicKey), DatabaseValue.blob(sender.publicKey))
                let row =
                    try database.query(
                        """
                        SELECT
                          (SELECT COUNT(*) FROM messages WHERE recipient = ? AND kind = ?),
                          (SELECT COALESCE(SUM(size), 0) FROM messages WHERE recipient = ? AND kind = ?),
                          (SELECT COUNT(*) FROM messages WHERE recipient = ? AND sender = ? AND message_id = ?),
                          (SELECT COUNT(*) FROM messages WHERE recipient = ? AND sender = ? AND kind = ?),
                          (SELECT COUNT(*) FROM messages WHERE sender = ?),
                          (SELECT COALESCE(SUM(size), 0) FROM messages WHERE sender = ?)
                        """,
                        [
                            to, .integer(kind.rawValue), to, .integer(kind.rawValue), to, from, .blob(messageId), to,
                            from, .integer(kind.requestKind.rawValue), from, from,
                        ]
                    ).first ?? []
                let column = { (index: Int) in index < row.count ? row[index].integer ?? 0 : 0 }
                let usage = StoreLimits.Usage(
                    recipientCount: Int(column(0)), recipientBytes: Int(column(1)), duplicate: column(2) > 0,
                    requestWaiting: kind.isRequest && column(3) > 0, senderCount: Int(column(4)),
                    senderBytes: Int(column(5)), nodeBytes: nodeBytes)
                if let refusal = limits.refusal(usage, kind: kind, adding: body.count) { return refusal }
                try database.query(
                    """
                    INSERT INTO messages(recipient, sender, message_id, stored_at, body, size, kind)
                    VALUES(?, ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        to, from, .blob(messageId), .integer(now), .blob(body), .integer(Int64(body.count)),
                        .integer(kind.rawValue),
                    ])
                let seq = try database.query("SELECT last_insert_rowid()").first?.first?.integer ?? 0
                return .stored(seq: UInt64(seq))
            }
            if case .stored = result { total.add(body.count) }
            return result
        }
    }

    func setContacts(for recipient: UserId, _ contacts: [[UInt8]]) throws(DatabaseFailure) {
        try serialised { () throws(DatabaseFailure) in
            try database.transaction { () throws(DatabaseFailure) in
                try database.query("DELETE FROM contacts WHERE recipient = ?", [.blob(recipient.publicKey)])
                for contact in contacts {
                    try database.query(
                        "INSERT OR IGNORE INTO contacts(recipient, contact) VALUES(?, ?)",
                        [.blob(recipient.publicKey), .blob(contact)])
                }
            }
        }
    }

    func hasContact(_ contact: [UInt8], for recipient: UserId) throws(DatabaseFailure) -> Bool {
        try serialised { () throws(DatabaseFailure) in
            try !database.query(
                "SELECT 1 FROM contacts WHERE recipient = ? AND contact = ?",
                [.blob(recipient.publicKey), .blob(contact)]
            ).isEmpty
        }
    }

    func hasMailbox(_ user: UserId) throws(DatabaseFailure) -> Bool {
        try serialised { () throws(DatabaseFailure) in
            try !database.query("SELECT 1 FROM contacts WHERE recipient = ? LIMIT 1", [.blob(user.publicKey)]).isEmpty
        }
    }

    func pull(
        for recipient: UserId, after seq: UInt64, maxCount: Int, maxBytes: Int, now: Int64, api: DepositKind.Api
    ) throws(DatabaseFailure) -> PulledBatch {
        try serialised { () throws(DatabaseFailure) in
            let rows = try database.query(
                """
                SELECT seq, sender, stored_at, body FROM messages
                WHERE recipient = ? AND seq > ? AND claimed_until <= ? AND kind IN \(api.sqlKinds)
                ORDER BY seq LIMIT ?
                """,
                [
                    .blob(recipient.publicKey), .integer(Int64(clamping: seq)), .integer(now),
                    .integer(Int64(maxCount + 1)),
                ])
            let (count, more) = StoreLimits.window(
                sizes: rows.map { $0.count == 4 ? $0[3].blob?.count ?? 0 : 0 }, maxCount: maxCount, maxBytes: maxBytes)
            let records = rows.prefix(count).compactMap { ExpressProtocol.Record(row: $0.map(Optional.some)) }
            if let first = records.first?.seq, let last = records.last?.seq {
                // One writer: nothing claimed these between the read and here. Only
                // the rows handed out (as on PostgreSQL): one in the range still
                // claimed by an earlier pull keeps its own claim's end.
                try database.query(
                    """
                    UPDATE messages SET claimed_until = ?
                    WHERE recipient = ? AND seq >= ? AND seq <= ? AND claimed_until <= ? AND kind IN \(api.sqlKinds)
                    """,
                    [
                        .integer(now + limits.pullLeaseMilliseconds), .blob(recipient.publicKey),
                        .integer(Int64(clamping: first)), .integer(Int64(clamping: last)), .integer(now),
                    ])
            }
            return PulledBatch(records: records, more: more)
        }
    }

    func delete(for recipient: UserId, through seq: UInt64, api: DepositKind.Api) throws(DatabaseFailure) -> Int {
        try serialised { () throws(DatabaseFailure) in
            try database.query(
                "DELETE FROM messages WHERE recipient = ? AND seq <= ? AND claimed_until > 0 AND kind IN \(api.sqlKinds)",
                [.blob(recipient.publicKey), .integer(Int64(clamping: seq))])
            return database.changes
        }
    }

    func deleteCarrier(for recipient: UserId, storedUpTo storedAt: Int64) throws(DatabaseFailure) -> Int {
        try serialised { () throws(DatabaseFailure) in
            try database.query(
                "DELETE FROM messages WHERE recipient = ? AND stored_at <= ? AND kind IN \(DepositKind.Api.carrier.sqlKinds)",
                [.blob(recipient.publicKey), .integer(storedAt)])
            return database.changes
        }
    }

    func purge(now: Int64) throws(DatabaseFailure) {
        try serialised { () throws(DatabaseFailure) in
            try database.query(
                "DELETE FROM messages WHERE stored_at < ?", [.integer(now - limits.maxAgeSeconds * 1000)])
            try database.query("DELETE FROM nonces WHERE expires < ?", [.integer(now)])
        }
    }

    func rememberNonce(user: UserId, nonce: String, expires: Int64) throws(DatabaseFailure) -> Bool {
        try serialised { () throws(DatabaseFailure) in
            try database.query(
                "INSERT OR IGNORE INTO nonces(user, nonce, expires) VALUES(?, ?, ?)",
                [.blob(user.publicKey), .text(nonce), .integer(expires)])
            return database.changes == 1
        }
    }

    func close() {}

    private func serialised<T>(_ body: () throws(DatabaseFailure) -> T) throws(DatabaseFailure) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
