import CPostgres
import Foundation

/// A thin layer over one libpq connection: statements with bound values
/// (sent in binary, typed, so no value is ever spliced into SQL text) and
/// rows read by column. Not thread-safe: `PostgresPool` lends it to one
/// thread at a time. libpq calls block the calling thread; it makes no
/// callbacks of its own.
final class PostgresConnection {
    private var handle: OpaquePointer?

    /// Connects to `url` (`postgresql://USER@HOST:PORT/DB`, or libpq's
    /// `key=value` form); gives up after 5 s unless the URL says otherwise.
    init(url: String) throws(DatabaseFailure) {
        // Later keywords override earlier ones: the URL's own settings win.
        let keywords = ["connect_timeout", "application_name", "dbname"]
        let values = ["5", "carrier-express", url]
        handle = withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(handle)
            self.handle = nil
            throw DatabaseFailure(description: "cannot connect to PostgreSQL: \(Self.trimmed(message))")
        }
    }

    deinit { PQfinish(handle) }

    /// False once the server went away; `reset` tries once to connect again.
    var isUsable: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Connects again with the same settings (after a server restart).
    func reset() {
        guard let handle else { return }
        PQreset(handle)
        // A new session: the statements prepared on the old one are gone.
        statements.removeAll()
    }

    /// Runs `sql` with `values` as `$1`, `$2`, …; returns every row's columns
    /// (nil for NULL) and how many rows the statement changed. Each distinct
    /// statement is prepared once per connection: parsing and planning it
    /// again for every request cost the server more than running it.
    @discardableResult
    func query(_ sql: String, _ values: [DatabaseValue] = []) throws(DatabaseFailure) -> PostgresResult {
        guard let handle else { throw DatabaseFailure(description: "the PostgreSQL connection is closed") }
        let parameters = values.map(Parameter.init)
        let types = parameters.map(\.type)
        let name = try prepared(sql, types: types, on: handle)
        let result: OpaquePointer? = parameters.map(\.bytes).withPointers { pointers in
            PQexecPrepared(
                handle, name, Int32(parameters.count), pointers, parameters.map { Int32($0.bytes.count) },
                parameters.map { _ in 1 }, 1)
        }
        defer { PQclear(result) }
        try check(result, on: handle)
        return PostgresResult(result)
    }

    /// Statement names by SQL and parameter types, on this connection.
    private var statements: [String: String] = [:]

    private func prepared(_ sql: String, types: [Oid], on handle: OpaquePointer) throws(DatabaseFailure) -> String {
        let key = types.map(String.init).joined(separator: ",") + ";" + sql
        if let name = statements[key] { return name }
        let name = "s\(statements.count)"
        let result = PQprepare(handle, name, sql, Int32(types.count), types)
        defer { PQclear(result) }
        try check(result, on: handle)
        statements[key] = name
        return name
    }

    private func check(_ result: OpaquePointer?, on handle: OpaquePointer) throws(DatabaseFailure) {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK: return
        default:
            let message = result.map { String(cString: PQresultErrorMessage($0)) } ?? ""
            throw DatabaseFailure(
                description: Self.trimmed(message.isEmpty ? String(cString: PQerrorMessage(handle)) : message))
        }
    }

    /// Runs several statements without values (migrations).
    func execute(_ sql: String) throws(DatabaseFailure) {
        guard let handle else { throw DatabaseFailure(description: "the PostgreSQL connection is closed") }
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, on: handle)
    }

    /// Runs `body` in one transaction: all of it or nothing. A failure rolls
    /// back, so the connection goes back to the pool clean.
    func transaction<T>(_ body: () throws(DatabaseFailure) -> T) throws(DatabaseFailure) -> T {
        try query("BEGIN")
        do {
            let result = try body()
            try query("COMMIT")
            return result
        } catch {
            _ = try? query("ROLLBACK")
            throw error
        }
    }

    private static func trimmed(_ message: String) -> String {
        message.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "\n", with: "; ")
    }

    /// A value in PostgreSQL's binary form, with its type's OID.
    private struct Parameter {
        var type: Oid
        var bytes: [UInt8]

        init(_ value: DatabaseValue) {
            switch value {
            case .integer(let number):
                type = 20  // int8
                bytes = withUnsafeBytes(of: number.bigEndian, Array.init)
            case .blob(let data):
                type = 17  // bytea
                bytes = data
            case .text(let text):
                type = 25  // text
                bytes = Array(text.utf8)
            }
        }
    }
}

/// The rows of one statement, copied out of libpq's result.
struct PostgresResult {
    /// Each row's columns; nil is SQL NULL.
    var rows: [[DatabaseValue?]] = []
    /// Rows inserted, updated or deleted.
    var changes = 0

    init(_ result: OpaquePointer?) {
        guard let result else { return }
        changes = Int(String(cString: PQcmdTuples(result))) ?? 0
        let columns = PQnfields(result)
        for row in 0..<PQntuples(result) {
            rows.append(
                (0..<columns).map { column -> DatabaseValue? in
                    guard PQgetisnull(result, row, column) == 0 else { return nil }
                    let count = Int(PQgetlength(result, row, column))
                    let bytes: [UInt8] =
                        PQgetvalue(result, row, column).map {
                            Array(UnsafeRawBufferPointer(start: $0, count: count))
                        } ?? []
                    return Self.decode(bytes, type: PQftype(result, column))
                })
        }
    }

    /// Binary result values: integers are big-endian, text is UTF-8.
    private static func decode(_ bytes: [UInt8], type: Oid) -> DatabaseValue {
        switch type {
        case 20, 23, 21, 16:  // int8, int4, int2, bool
            // Sign-extended from the first byte.
            var value: Int64 = (bytes.first ?? 0) >= 0x80 ? -1 : 0
            for byte in bytes { value = value << 8 | Int64(byte) }
            return .integer(value)
        case 25, 1043, 19:  // text, varchar, name
            return .text(String(decoding: bytes, as: UTF8.self))
        default:
            return .blob(bytes)
        }
    }
}

private func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { for copy in copies { free(copy) } }
    return body(copies.map { UnsafePointer($0) } + [nil])
}

extension Array where Element == [UInt8] {
    /// Pointers to each byte array, valid for the call of `body`.
    fileprivate func withPointers<R>(_ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies = map { bytes -> UnsafeMutablePointer<CChar> in
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: Swift.max(bytes.count, 1))
            bytes.withUnsafeBytes { raw in
                if let base = raw.baseAddress {
                    UnsafeMutableRawPointer(pointer).copyMemory(from: base, byteCount: raw.count)
                }
            }
            return pointer
        }
        defer { for copy in copies { copy.deallocate() } }
        return body(copies.map { UnsafePointer($0) })
    }
}
