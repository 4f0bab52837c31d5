import CarrierNode
import Foundation

/// The store for several Express nodes on one PostgreSQL database, acting as
/// one (docs/express.md, "Running a cluster"):
/// - the node key lives in the database, so every node presents the same key;
/// - a deposit takes the recipient's lock (a transaction-scoped advisory
///   lock), so duplicates and quotas are decided one deposit at a time across
///   nodes;
/// - a pull claims its rows (`FOR UPDATE SKIP LOCKED`, then `claimed_until`),
///   so two nodes pulling for one recipient at once hand out different records;
/// - nonces are one table, so a request replayed to another node is refused;
/// - the purge runs on whichever node holds its advisory lock; the others skip it;
/// - migrations run under a session advisory lock, so nodes starting together
///   migrate once.
/// Commits are synchronous (the server's default): a confirmed deposit is on
/// the server's disk. Thread-safe: each call borrows a pooled connection.
final class PostgresExpressStore: ExpressStore, @unchecked Sendable {
    let limits: StoreLimits
    private let pool: PostgresPool
    private let total = NodeTotal()

    /// Advisory lock keys (one namespace per database).
    enum LockKey {
        static let migration: Int64 = 0x4578_7072_6573_0001
        static let purge: Int64 = 0x4578_7072_6573_0002

        /// The recipient's lock: the first 8 bytes of its key (collisions only serialise).
        static func recipient(_ user: UserId) -> Int64 {
            user.publicKey.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        }
    }

    /// Connects to `url` (`postgresql://USER@HOST:PORT/DB`) with up to
    /// `connections` connections and migrates the schema.
    init(url: String, connections: Int, limits: StoreLimits) throws(DatabaseFailure) {
        pool = try PostgresPool(url: url, size: connections)
        self.limits = limits
        try migrate()
    }

    private func migrate() throws(DatabaseFailure) {
        try pool.with { (connection) throws(DatabaseFailure) in
            try connection.query("SELECT pg_advisory_lock($1)", [.integer(LockKey.migration)])
            defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [.integer(LockKey.migration)]) }
            try connection.query("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)")
            let current = try Self.version(connection)
            for migration in ExpressSchema.migrations where migration.version > current {
                try connection.transaction { () throws(DatabaseFailure) in
                    try connection.execute(migration.postgres)
                    try connection.query("DELETE FROM schema_version")
                    try connection.query(
                        "INSERT INTO schema_version(version) VALUES($1)", [.integer(Int64(migration.version))])
                }
            }
        }
    }

    private static func version(_ connection: PostgresConnection) throws(DatabaseFailure) -> Int {
        let rows = try connection.query("SELECT COALESCE(MAX(version), 0)::bigint FROM schema_version").rows
        return Int(rows.first?.first??.integer ?? 0)
    }

    func schemaVersion() throws(DatabaseFailure) -> Int {
        try pool.with { (connection) throws(DatabaseFailure) in try Self.version(connection) }
    }

    func identitySecret(makeNew: () -> [UInt8]) throws(DatabaseFailure) -> [UInt8] {
        try pool.with { (connection) throws(DatabaseFailure) in
            // The first node to start makes the key; the rest read it.
            try connection.query(
                "INSERT INTO identity(id, secret) VALUES(1, $1) ON CONFLICT (id) DO NOTHING", [.blob(makeNew())])
            guard
                let secret = try connection.query("SELECT secret FROM identity WHERE id = 1").rows.first?.first??.blob,
                secret.count == 32
            else { throw DatabaseFailure(description: "the database's identity key is not 32 bytes") }
            return secret
        }
    }

    func deposit(
        recipient: UserId, sender: UserId, messageId: [UInt8], body: [UInt8], kind: DepositKind, now: Int64
    ) throws(DatabaseFailure) -> DepositResult {
        let nodeBytes = try total.current(now: now) { () throws(DatabaseFailure) -> Int64 in
            try pool.with { (connection) throws(DatabaseFailure) -> Int64 in
                try connection.query("SELECT COALESCE(SUM(size), 0)::bigint FROM messages").rows.first?.first??
                    .integer ?? 0
            }
        }
        let result = try pool.with { (connection) throws(DatabaseFailure) -> DepositResult in
            try connection.transaction { () throws(DatabaseFailure) -> DepositResult in
                // The recipient's lock orders its deposits across nodes; the sender's and
                // the node's totals are read without one (two nodes may pass them by a deposit each).
                try connection.query("SELECT pg_advisory_xact_lock($1)", [.integer(LockKey.recipient(recipient))])
                let row =
                    try connection.query(
                        """
                        SELECT
                          (SELECT COUNT(*) FROM messages WHERE recipient = $1 AND kind = $4),
                          (SELECT COALESCE(SUM(size), 0)::bigint FROM messages WHERE recipient = $1 AND kind = $4),
                          (SELECT COUNT(*) FROM messages WHERE recipient = $1 AND sender = $2 AND message_id = $3),
                          (SELECT COUNT(*) FROM messages WHERE recipient = $1 AND sender = $2 AND kind = $5),
                          (SELECT COUNT(*) FROM messages WHERE sender = $2),
                          (SELECT COALESCE(SUM(size), 0)::bigint FROM messages WHERE sender = $2)
                        """,
                        [
                            .blob(recipient.publicKey), .blob(sender.publicKey), .blob(messageId),
                            .integer(kind.rawValue), .integer(kind.requestKind.rawValue),
                        ]
                    ).rows.first ?? []
                let column = { (index: Int) in index < row.count ? row[index]?.integer ?? 0 : 0 }
                let usage = StoreLimits.Usage(
                    recipientCount: Int(column(0)), recipientBytes: Int(column(1)), duplicate: column(2) > 0,
                    requestWaiting: kind.isRequest && column(3) > 0, senderCount: Int(column(4)),
                    senderBytes: Int(column(5)), nodeBytes: nodeBytes)
                if let refusal = limits.refusal(usage, kind: kind, adding: body.count) { return refusal }
                let inserted = try connection.query(
                    """
                    INSERT INTO messages(recipient, sender, message_id, stored_at, body, size, kind)
                    VALUES($1, $2, $3, $4, $5, $6, $7) RETURNING seq
                    """,
                    [
                        .blob(recipient.publicKey), .blob(sender.publicKey), .blob(messageId), .integer(now),
                        .blob(body), .integer(Int64(body.count)), .integer(kind.rawValue),
                    ])
                guard let seq = inserted.rows.first?.first??.integer else {
                    throw DatabaseFailure(description: "the insert returned no sequence number")
                }
                return .stored(seq: UInt64(seq))
            }
        }
        if case .stored = result { total.add(body.count) }
        return result
    }

    func setContacts(for recipient: UserId, _ contacts: [[UInt8]]) throws(DatabaseFailure) {
        try pool.with { (connection) throws(DatabaseFailure) in
            try connection.transaction { () throws(DatabaseFailure) in
                try connection.query("DELETE FROM contacts WHERE recipient = $1", [.blob(recipient.publicKey)])
                for contact in contacts {
                    try connection.query(
                        "INSERT INTO contacts(recipient, contact) VALUES($1, $2) ON CONFLICT DO NOTHING",
                        [.blob(recipient.publicKey), .blob(contact)])
                }
            }
        }
    }

    func hasContact(_ contact: [UInt8], for recipient: UserId) throws(DatabaseFailure) -> Bool {
        try pool.with { (connection) throws(DatabaseFailure) in
            try !connection.query(
                "SELECT 1 FROM contacts WHERE recipient = $1 AND contact = $2",
                [.blob(recipient.publicKey), .blob(contact)]
            ).rows.isEmpty
        }
    }

    func hasMailbox(_ user: UserId) throws(DatabaseFailure) -> Bool {
        try pool.with { (connection) throws(DatabaseFailure) in
            try !connection.query("SELECT 1 FROM contacts WHERE recipient = $1 LIMIT 1", [.blob(user.publicKey)])
                .rows.isEmpty
        }
    }

    func pull(
        for recipient: UserId, after seq: UInt64, maxCount: Int, maxBytes: Int, now: Int64, api: DepositKind.Api
    ) throws(DatabaseFailure) -> PulledBatch {
        try pool.with { (connection) throws(DatabaseFailure) in
            try connection.transaction { () throws(DatabaseFailure) -> PulledBatch in
                // Rows another node is pulling right now are locked: skipped, not waited for.
                let candidates = try connection.query(
                    """
                    SELECT seq, size FROM messages
                    WHERE recipient = $1 AND seq > $2 AND claimed_until <= $3 AND kind IN \(api.sqlKinds)
                    ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED
                    """,
                    [
                        .blob(recipient.publicKey), .integer(Int64(clamping: seq)), .integer(now),
                        .integer(Int64(maxCount + 1)),
                    ]
                ).rows
                let (count, more) = StoreLimits.window(
                    sizes: candidates.map { Int($0.count == 2 ? $0[1]?.integer ?? 0 : 0) }, maxCount: maxCount,
                    maxBytes: maxBytes)
                let chosen = candidates.prefix(count).compactMap { $0.first??.integer }
                guard !chosen.isEmpty else { return PulledBatch(records: [], more: false) }
                let rows = try connection.query(
                    """
                    UPDATE messages SET claimed_until = $1 WHERE seq = ANY($2::text::bigint[])
                    RETURNING seq, sender, stored_at, body
                    """,
                    [
                        .integer(now + limits.pullLeaseMilliseconds),
                        .text("{" + chosen.map(String.init).joined(separator: ",") + "}"),
                    ]
                ).rows
                let records = rows.compactMap(ExpressProtocol.Record.init(row:)).sorted { $0.seq < $1.seq }
                return PulledBatch(records: records, more: more)
            }
        }
    }

    func delete(for recipient: UserId, through seq: UInt64, api: DepositKind.Api) throws(DatabaseFailure) -> Int {
        try pool.with { (connection) throws(DatabaseFailure) in
            try connection.query(
                "DELETE FROM messages WHERE recipient = $1 AND seq <= $2 AND claimed_until > 0 AND kind IN \(api.sqlKinds)",
                [.blob(recipient.publicKey), .integer(Int64(clamping: seq))]
            ).changes
        }
    }

    func deleteCarrier(for recipient: UserId, storedUpTo storedAt: Int64) throws(DatabaseFailure) -> Int {
        try pool.with { (connection) throws(DatabaseFailure) in
            try connection.query(
                "DELETE FROM messages WHERE recipient = $1 AND stored_at <= $2 AND kind IN \(DepositKind.Api.carrier.sqlKinds)",
                [.blob(recipient.publicKey), .integer(storedAt)]
            ).changes
        }
    }

    func purge(now: Int64) throws(DatabaseFailure) {
        try pool.with { (connection) throws(DatabaseFailure) in
            try connection.transaction { () throws(DatabaseFailure) in
                let mine = try connection.query("SELECT pg_try_advisory_xact_lock($1)", [.integer(LockKey.purge)])
                guard mine.rows.first?.first??.integer == 1 else { return }
                try connection.query(
                    "DELETE FROM messages WHERE stored_at < $1", [.integer(now - limits.maxAgeSeconds * 1000)])
                try connection.query("DELETE FROM nonces WHERE expires < $1", [.integer(now)])
            }
        }
    }

    func rememberNonce(user: UserId, nonce: String, expires: Int64) throws(DatabaseFailure) -> Bool {
        try pool.with { (connection) throws(DatabaseFailure) in
            try connection.query(
                "INSERT INTO nonces(user_key, nonce, expires) VALUES($1, $2, $3) ON CONFLICT DO NOTHING",
                [.blob(user.publicKey), .text(nonce), .integer(expires)]
            ).changes == 1
        }
    }

    func close() { pool.close() }
}
