import COpenSSL
import Foundation

/// A coturn server on 127.0.0.1 for one test, with REST credentials
/// (`--use-auth-secret`): username `<expiry>:<name>`, password
/// base64(HMAC-SHA1(secret, username)); or with one long-term user
/// (`staticUser:`). Stopped when released.
public final class CoturnServer: @unchecked Sendable {
    public let port: UInt16
    public let secret = "carrier-test-\(UInt32.random(in: 0...UInt32.max))"
    private let child: ChildProcess

    public convenience init() async throws {
        try await self.init(auth: nil)
    }

    /// A server that relays from `relayAddress` (another loopback address,
    /// 127.0.0.2 say): libnice keeps one relay candidate per relayed IP
    /// address, so two servers that both relay from 127.0.0.1 give one.
    public convenience init(relayAddress: String) async throws {
        try await self.init(auth: nil, relayAddress: relayAddress)
    }

    /// A server whose only credentials are `user`'s (long-term, in `realm`).
    /// The password goes in argv: a test's throwaway credential on a test's own server.
    public convenience init(staticUser user: String, password: String, realm: String) async throws {
        try await self.init(auth: ["--lt-cred-mech", "--user=\(user):\(password)", "--realm=\(realm)"])
    }

    private init(auth: [String]?, relayAddress: String = "127.0.0.1") async throws {
        port = UInt16.random(in: 20000...29999)
        let relayBase = Int(port) + 10000
        child = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/turnserver"),
            arguments: [
                "-n", "--listening-ip=127.0.0.1", "--relay-ip=\(relayAddress)", "--listening-port=\(port)",
                "--min-port=\(relayBase)", "--max-port=\(relayBase + 200)",
            ]
                + (auth ?? ["--use-auth-secret", "--static-auth-secret=\(secret)", "--realm=carrier.test"])
                + [
                    "--allow-loopback-peers", "--no-cli", "--no-tls", "--no-dtls", "--log-file=stdout", "--simple-log",
                    "--no-software-attribute",
                ])
        // Ready once it accepts TCP connections on its port.
        for _ in 0..<100 {
            if Self.canConnect(port: port) { return }
            try await Task.sleep(for: .milliseconds(50))  // bounded wait for the server to listen
        }
        throw CocoaError(
            .fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "coturn did not start: \(child.stderr)"])
    }

    /// REST credentials valid for an hour.
    public func credentials(user: String = "carrier") -> (username: String, password: String) {
        let username = "\(Int(Date().timeIntervalSince1970) + 3600):\(user)"
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        _ = HMAC(
            EVP_sha1(), secret, Int32(secret.utf8.count), Array(username.utf8), username.utf8.count, &digest, &length)
        return (username, Data(digest.prefix(Int(length))).base64EncodedString())
    }

    /// Stops the server and waits (bounded) for it to exit.
    public func stop() async {
        child.process.terminate()
        _ = await child.waitForExit(timeout: .seconds(5))
    }

    deinit { if child.process.isRunning { child.process.terminate() } }

    static func canConnect(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
