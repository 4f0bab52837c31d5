import Foundation

/// A PostgreSQL server for one test: `initdb` in a temporary directory (as
/// the `postgres` user when the tests run as root, since the server refuses
/// root), then `postgres` on a free port on 127.0.0.1, trusting local
/// connections. `stop()` shuts it down fast and removes the directory; a
/// server dropped without it is interrupted in deinit.
public final class PostgresServer: @unchecked Sendable {
    public let port: UInt16
    public let directory: String
    private let child: ChildProcess

    public init() async throws {
        let bin = try Self.binDirectory()
        guard let made = Self.makeTemporaryDirectory(NSTemporaryDirectory() + "/carrier-pg-XXXXXX") else {
            throw Self.failure("cannot make a temporary directory")
        }
        directory = made
        let user =
            Self.runAsPostgres
            ? ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] : []
        if Self.runAsPostgres {
            guard let account = getpwnam("postgres") else { throw Self.failure("there is no postgres user") }
            chown(directory, account.pointee.pw_uid, account.pointee.pw_gid)
        }
        let initdb = try await Self.run(
            user + [
                bin + "/initdb", "-D", directory + "/data", "-U", "postgres", "--auth=trust", "-E", "UTF8",
                "--no-locale", "--no-sync",
            ])
        guard initdb.status == 0 else { throw Self.failure("initdb failed: \(initdb.output.suffix(2000))") }

        var lastError = ""
        for _ in 0..<5 {
            let port = UInt16.random(in: 30000...39999)
            let arguments =
                user + [
                    bin + "/postgres", "-D", directory + "/data", "-p", "\(port)", "-k", directory,
                    "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "fsync=on",
                    "-c", "synchronous_commit=on",
                ]
            let child = try ChildProcess(
                executable: URL(fileURLWithPath: arguments[0]), arguments: Array(arguments.dropFirst()))
            // Ready once it accepts sessions, not just TCP (bounded wait).
            for _ in 0..<200 where child.process.isRunning {
                if CoturnServer.canConnect(port: port),
                    try await Self.run([bin + "/pg_isready", "-q", "-h", "127.0.0.1", "-p", "\(port)"]).status == 0
                {
                    self.port = port
                    self.child = child
                    return
                }
                try await Task.sleep(for: .milliseconds(25))  // bounded wait for the server to listen
            }
            lastError = child.stderr
            child.process.terminate()
            _ = await child.waitForExit(timeout: .seconds(5))
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw Self.failure("postgres did not start: \(lastError.suffix(2000))")
    }

    /// `postgresql://postgres@127.0.0.1:PORT/DATABASE`.
    public func url(database: String = "postgres") -> String { "postgresql://postgres@127.0.0.1:\(port)/\(database)" }

    /// Runs SQL through psql; returns its output (unaligned, tuples only).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") async throws -> String {
        let result = try await Self.run([
            "/usr/bin/psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(port)", "-U",
            "postgres", "-d", database, "-c", sql,
        ])
        guard result.status == 0 else { throw Self.failure("psql failed: \(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server at once (fast shutdown: clients are cut off) and removes its files.
    public func stop() async {
        if child.process.isRunning {
            child.process.interrupt()
            if await child.waitForExit(timeout: .seconds(10)) == nil { kill(child.process.processIdentifier, SIGKILL) }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { if child.process.isRunning { child.process.interrupt() } }

    private static var runAsPostgres: Bool { geteuid() == 0 }

    /// The newest installed server's binaries (Debian keeps them out of PATH).
    private static func binDirectory() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init)
            .sorted()
        if let newest = versions.last { return "\(root)/\(newest)/bin" }
        throw failure("PostgreSQL is not installed (scripts/setup.sh installs the postgresql package)")
    }

    private static func makeTemporaryDirectory(_ template: String) -> String? {
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { return nil }
        return String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let child = try ChildProcess(
            executable: URL(fileURLWithPath: arguments[0]), arguments: Array(arguments.dropFirst()))
        guard let status = await child.waitForExit(timeout: .seconds(60)) else {
            child.process.terminate()
            throw failure("\(arguments[0]) did not finish within 60 s")
        }
        return (status, child.lines.joined(separator: "\n") + child.stderr)
    }

    private static func failure(_ text: String) -> Error {
        CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: text])
    }
}
