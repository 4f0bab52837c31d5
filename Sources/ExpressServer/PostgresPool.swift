import Foundation

/// Connections to one PostgreSQL database, lent to one thread at a time:
/// libmicrohttpd's threads each borrow one for a request, so requests run in
/// parallel and their commits can share the server's WAL flushes (group
/// commit). Opened on demand up to `size`; a connection the server dropped
/// is reset before it is lent again. Thread-safe.
final class PostgresPool: @unchecked Sendable {
    let url: String
    let size: Int
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var opened = 0
    private var closed = false

    /// A pool for `url`; connects once now, so a wrong URL fails at start.
    init(url: String, size: Int) throws(DatabaseFailure) {
        self.url = url
        self.size = max(1, size)
        idle.append(try PostgresConnection(url: url))
        opened = 1
    }

    /// Runs `body` with a connection of its own; waits up to `timeout` for one.
    func with<T>(timeout: TimeInterval = 10, _ body: (PostgresConnection) throws(DatabaseFailure) -> T)
        throws(DatabaseFailure) -> T
    {
        let connection = try borrow(timeout: timeout)
        defer { giveBack(connection) }
        if !connection.isUsable { connection.reset() }
        return try body(connection)
    }

    /// Closes every idle connection; borrowed ones close when given back.
    func close() {
        condition.withLock {
            closed = true
            opened -= idle.count
            idle.removeAll()
            condition.broadcast()
        }
    }

    private func borrow(timeout: TimeInterval) throws(DatabaseFailure) -> PostgresConnection {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        while true {
            if closed {
                condition.unlock()
                throw DatabaseFailure(description: "the PostgreSQL store is closed")
            }
            if let connection = idle.popLast() {
                condition.unlock()
                return connection
            }
            if opened < size {
                opened += 1
                condition.unlock()
                do { return try PostgresConnection(url: url) } catch {
                    condition.withLock {
                        opened -= 1
                        condition.signal()
                    }
                    throw error
                }
            }
            if !condition.wait(until: deadline) {
                condition.unlock()
                throw DatabaseFailure(
                    description: "all \(size) PostgreSQL connections stayed busy for \(Int(timeout)) s")
            }
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        condition.withLock {
            if closed { opened -= 1 } else { idle.append(connection) }
            condition.signal()
        }
    }
}
