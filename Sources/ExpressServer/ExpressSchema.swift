/// The store's schema as numbered migrations, the same steps for SQLite and
/// PostgreSQL. A database remembers the last one it ran (SQLite's
/// `user_version`, PostgreSQL's `schema_version` table) and each store runs
/// the rest at start, in one transaction each. Never edit a shipped step:
/// add one.
enum ExpressSchema {
    struct Migration {
        var version: Int
        var sqlite: String
        var postgres: String
    }

    static var latest: Int { migrations.last?.version ?? 0 }

    static let migrations: [Migration] = [
        // 1: the first schema (SQLite databases before versioning have it, at user_version 0).
        Migration(
            version: 1,
            sqlite: """
                CREATE TABLE IF NOT EXISTS messages(
                  seq INTEGER PRIMARY KEY AUTOINCREMENT, recipient BLOB NOT NULL, sender BLOB NOT NULL,
                  message_id BLOB NOT NULL, stored_at INTEGER NOT NULL, body BLOB NOT NULL,
                  UNIQUE(recipient, sender, message_id));
                CREATE INDEX IF NOT EXISTS messages_by_recipient ON messages(recipient, seq);
                CREATE TABLE IF NOT EXISTS nonces(
                  user BLOB NOT NULL, nonce TEXT NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY(user, nonce));
                CREATE TABLE IF NOT EXISTS identity(id INTEGER PRIMARY KEY CHECK (id = 1), secret BLOB NOT NULL);
                """,
            postgres: """
                CREATE TABLE IF NOT EXISTS messages(
                  seq BIGSERIAL PRIMARY KEY, recipient BYTEA NOT NULL, sender BYTEA NOT NULL,
                  message_id BYTEA NOT NULL, stored_at BIGINT NOT NULL, body BYTEA NOT NULL,
                  UNIQUE(recipient, sender, message_id));
                CREATE INDEX IF NOT EXISTS messages_by_recipient ON messages(recipient, seq);
                CREATE TABLE IF NOT EXISTS nonces(
                  user_key BYTEA NOT NULL, nonce TEXT NOT NULL, expires BIGINT NOT NULL, PRIMARY KEY(user_key, nonce));
                CREATE TABLE IF NOT EXISTS identity(id INTEGER PRIMARY KEY CHECK (id = 1), secret BYTEA NOT NULL);
                """),
        // 2: sizes kept beside the bodies (quotas without reading them), pull
        // claims (several nodes pulling at once), indexes for the purge.
        Migration(
            version: 2,
            sqlite: """
                ALTER TABLE messages ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
                UPDATE messages SET size = LENGTH(body);
                ALTER TABLE messages ADD COLUMN claimed_until INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX IF NOT EXISTS messages_by_age ON messages(stored_at);
                CREATE INDEX IF NOT EXISTS nonces_by_expiry ON nonces(expires);
                """,
            postgres: """
                ALTER TABLE messages ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
                UPDATE messages SET size = octet_length(body);
                ALTER TABLE messages ADD COLUMN claimed_until BIGINT NOT NULL DEFAULT 0;
                CREATE INDEX IF NOT EXISTS messages_by_age ON messages(stored_at);
                CREATE INDEX IF NOT EXISTS nonces_by_expiry ON nonces(expires);
                """),
        // 3: what a record is (0 a message, 1 a friend request: quotas of their
        // own), senders indexed (per-sender quotas), and each recipient's
        // registered contacts (ExpressContact: who may leave it messages).
        Migration(
            version: 3,
            sqlite: """
                ALTER TABLE messages ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX IF NOT EXISTS messages_by_sender ON messages(sender);
                CREATE TABLE IF NOT EXISTS contacts(
                  recipient BLOB NOT NULL, contact BLOB NOT NULL, PRIMARY KEY(recipient, contact));
                """,
            postgres: """
                ALTER TABLE messages ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX IF NOT EXISTS messages_by_sender ON messages(sender);
                CREATE TABLE IF NOT EXISTS contacts(
                  recipient BYTEA NOT NULL, contact BYTEA NOT NULL, PRIMARY KEY(recipient, contact));
                """),
    ]
}
