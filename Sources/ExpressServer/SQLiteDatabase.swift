import CSQLite
import CarrierLog
import Glibc

/// A thin layer over one SQLite connection: statements with bound values and
/// rows read by column. Not thread-safe: its owner serialises access.
final class SQLiteDatabase {
    typealias Failure = DatabaseFailure
    typealias Value = DatabaseValue

    private var handle: OpaquePointer?

    /// Opens (creating) the database at `path`; ":memory:" keeps it in memory.
    /// A file is made 0600, and an existing one that others may read is
    /// made so (it holds the Express node's secret key): SQLite gives its
    /// journal files the database's mode.
    init(path: String) throws(Failure) {
        if path != ":memory:" { try Self.makePrivate(path) }
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw Failure(description: "cannot open \(path): \(message)")
        }
        sqlite3_busy_timeout(handle, 5000)
    }

    deinit { sqlite3_close(handle) }

    /// Creates `path` 0600 if it is not there; takes group and other bits
    /// off one that is (saying so), and refuses a symbolic link.
    static func makePrivate(_ path: String) throws(Failure) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))")
            }
            close(descriptor)
            return
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw Failure(description: "\(path) is not a regular file (a link or a device): refused")
        }
        if status.st_mode & 0o077 != 0 {
            guard chmod(path, status.st_mode & 0o700) == 0 else {
                throw Failure(
                    description: "\(path) may be read by others and cannot be made private: "
                        + String(cString: strerror(errno)))
            }
            Logger("express").warning(
                "\(path) could be read by other users (mode \(String(status.st_mode & 0o777, radix: 8))): now 0600")
        }
    }

    func execute(_ sql: String) throws(Failure) {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &error) == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(error)
            throw Failure(description: message)
        }
    }

    /// Runs `sql` with `values` bound in order; returns every row's columns.
    @discardableResult
    func query(_ sql: String, _ values: [Value] = []) throws(Failure) -> [[Value]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else { throw lastError }
        defer { sqlite3_finalize(statement) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32 =
                switch value {
                case .integer(let number): sqlite3_bind_int64(statement, index, number)
                case .text(let text): sqlite3_bind_text(statement, index, text, -1, transient)
                case .blob(let bytes):
                    bytes.withUnsafeBytes {
                        sqlite3_bind_blob(
                            statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count),
                            transient)
                    }
                }
            guard code == SQLITE_OK else { throw lastError }
        }
        var rows: [[Value]] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else { throw lastError }
            rows.append(
                (0..<sqlite3_column_count(statement)).map { column in
                    switch sqlite3_column_type(statement, column) {
                    case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, column))
                    case SQLITE_TEXT: return .text(String(cString: sqlite3_column_text(statement, column)))
                    default:
                        let count = Int(sqlite3_column_bytes(statement, column))
                        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return .blob([]) }
                        return .blob(Array(UnsafeRawBufferPointer(start: pointer, count: count)))
                    }
                })
        }
        return rows
    }

    /// Rows changed by the last statement.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs `body` in one transaction: all of it or nothing.
    func transaction<T>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private var lastError: Failure { Failure(description: String(cString: sqlite3_errmsg(handle))) }
}
