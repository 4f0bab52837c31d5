import Foundation

/// c-toxcore's own bootstrap daemon (`tox-bootstrapd`, Debian's
/// toxcore-utils) on a free port of 127.0.0.1, for tests that stop a
/// bootstrap node and start it again: unlike `carrier node` (whose DHT key
/// toxcore's public API makes new on every start) it keeps its key in a file,
/// so the nodes that knew it can find it again. DHT and TCP relay on one port,
/// no LAN discovery, IPv4 only.
public final class ToxBootstrapDaemon: @unchecked Sendable {
    public let port: UInt16
    /// Its DHT public key, 64 hex digits (the same after a restart).
    public private(set) var publicKey = ""
    private let directory: String
    private var child: ChildProcess?

    /// `host:port:key`, as `--bootstrap` and `BootstrapNode(parsing:)` take it.
    public var entry: String { "127.0.0.1:\(port):\(publicKey)" }

    public init() async throws {
        directory = temporaryDirectory("tox-bootstrapd")
        port = try FreePort.udpAndTcp()
        let config = """
            port = \(port)
            keys_file_path = "\(directory)/keys"
            pid_file_path = "\(directory)/pid"
            enable_ipv6 = false
            enable_ipv4_fallback = true
            enable_lan_discovery = false
            enable_tcp_relay = true
            tcp_relay_ports = [\(port)]
            enable_motd = false
            bootstrap_nodes = ()

            """
        try config.write(toFile: directory + "/conf", atomically: true, encoding: .utf8)
        try await start()
    }

    deinit {
        child?.process.terminate()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts the daemon (again), and returns once it printed its key.
    public func start() async throws {
        guard child == nil else { return }
        let executable = "/usr/bin/tox-bootstrapd"
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw POSIXError(.ENOENT, "tox-bootstrapd is not installed (apt install toxcore-utils; make setup does)")
        }
        let process = try ChildProcess(
            executable: URL(fileURLWithPath: executable),
            arguments: ["--config=\(directory)/conf", "--foreground", "--log-backend=stdout"])
        guard let line = await process.waitForLine(containing: "Public Key:", timeout: .seconds(10)),
            let key = line.split(separator: ":").last?.trimmingCharacters(in: .whitespaces), key.count == 64
        else {
            process.process.terminate()
            throw POSIXError(.EIO, "tox-bootstrapd did not start: \(process.stderr.suffix(800))")
        }
        publicKey = key
        child = process
    }

    /// Kills it at once (as a crash or a power cut would), and waits for it to be gone.
    public func kill() async {
        guard let child else { return }
        Foundation.kill(child.process.processIdentifier, SIGKILL)
        _ = await child.waitForExit(timeout: .seconds(10))
        self.child = nil
    }

}

extension POSIXError {
    init(_ code: POSIXErrorCode, _ description: String) {
        self.init(code, userInfo: [NSLocalizedDescriptionKey: description])
    }
}
