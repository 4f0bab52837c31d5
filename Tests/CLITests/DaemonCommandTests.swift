import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `carrier daemon`: commands on its data directory run inside it (no
/// joining the network first), Ctrl-C on such a command stops it there, the
/// socket speaks JSON lines, commands that would run a second node of the
/// identity are refused, and with the daemon gone the commands start their
/// own node again (slow: real toxcore nodes, ~10 s to join).
@Suite(.timeLimit(.minutes(5))) struct DaemonCommandTests {
    @Test func commandsRunInsideTheDaemonAndOnTheirOwnWithoutIt() async throws {
        let root = temporaryDirectory("cli-daemon")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let network = try await LocalNetwork()
        defer { network.node.interrupt() }
        let common = network.common
        let (bobAddress, bobUser) = try await LocalNetwork.identity(root + "/bob")
        let listener = try CarrierProcess(
            ["listen", "--accept-friends", "--answer", "--json", "--data", root + "/bob"] + common)
        defer { listener.interrupt() }

        let daemon = try CarrierProcess(["daemon", "--json", "--data", root + "/alice"] + common)
        defer { daemon.interrupt() }
        let ready = try #require(json(await daemon.waitForLine(containing: "daemonReady", timeout: .seconds(20))))
        let socket = root + "/alice/carrier.sock"
        #expect(ready["socket"] as? String == socket)
        var info = stat()
        #expect(stat(socket, &info) == 0 && info.st_mode & 0o777 == 0o600, "the socket is its owner's only")

        // `id` through the daemon: its identity (the data directory is locked by the daemon).
        let (idStatus, idLines, _) = try await CarrierProcess.run(["id", "--json", "--data", root + "/alice"])
        #expect(idStatus == 0 && json(idLines.last)?["userId"] as? String == ready["userId"] as? String)

        // The daemon's node is online: these start their work at once (no "joining the network").
        let (added, _, addError) = try await CarrierProcess.run(
            ["friend", "add", bobAddress, "--wait", "90", "--data", root + "/alice"], timeout: .seconds(120))
        #expect(added == 0, "friend add: \(addError)")
        let (sent, sentLines, sentError) = try await CarrierProcess.run(
            ["message", bobUser, "hello from the daemon", "--data", root + "/alice"], timeout: .seconds(90))
        #expect(sent == 0, "message: \(sentError)")
        // The friend was connected already: the daemon's node has been online all along, so the
        // message waited no connection (that takes seconds), only a call into the node's thread.
        let connectedAfter = sentLines.last.flatMap { line in
            line.range(of: "friend connected after ").flatMap { Double(line[$0.upperBound...].prefix { $0 != " " }) }
        }
        #expect(sentLines.last?.contains("delivered") == true && (connectedAfter ?? .infinity) < 50, "\(sentLines)")
        #expect(await listener.waitForLine(containing: "hello from the daemon", timeout: .seconds(10)) != nil)

        // The socket's own requests: status, and a bad request gets an error, not a hang.
        let status = try #require(json(try Self.request(socket, #"{"op":"status"}"#)))
        #expect(status["userId"] as? String == ready["userId"] as? String && status["online"] as? Bool == true)
        let friends = status["friends"] as? [[String: Any]]
        #expect(friends?.first?["userId"] as? String == bobUser && friends?.first?["online"] as? Bool == true)
        let process = status["process"] as? [String: Any]
        #expect((process?["threads"] as? Int ?? 0) > 1 && (process?["fds"] as? Int ?? 0) > 3)
        #expect((process?["heapKB"] as? Int ?? 0) > 0 && (process?["rssKB"] as? Int ?? 0) > 0)
        let limits = status["limits"] as? [String: Any]
        #expect(limits?["maxIncomingFilesPerFriend"] as? Int == 8 && limits?["diskReserveBytes"] as? Int == 512 << 20)
        #expect(limits?["maxCalls"] as? Int == 32 && limits?["maxCallsPerFriend"] as? Int == 4)
        #expect(json(try Self.request(socket, "not json"))?["error"] != nil)

        // Another user who reaches the socket (its mode and the directory's loosened
        // by mistake) is refused by its uid. Needs root, to be that other user.
        if getuid() == 0 {
            #expect(chmod(root + "/alice", 0o711) == 0 && chmod(socket, 0o666) == 0)
            // The daemon answers a stranger at once and closes: read, and send nothing
            // (a send after its close would be refused, and could lose its answer).
            let script =
                "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                + "print(s.recv(4096).decode())"
            let stranger = try ChildProcess(
                executable: URL(fileURLWithPath: "/usr/bin/setpriv"),
                arguments: [
                    "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, socket,
                ])
            #expect(await stranger.waitForExit(timeout: .seconds(20)) == 0, "\(stranger.stderr)")
            let answer = stranger.lines.joined()
            #expect(answer.contains("its own user only") && !answer.contains("userId"), "\(answer)")
            #expect(chmod(root + "/alice", 0o700) == 0 && chmod(socket, 0o600) == 0)
        }
        let notRouted = json(try Self.request(socket, #"{"op":"run","args":["listen"]}"#))
        #expect((notRouted?["err"] as? String)?.contains("the daemon runs only") == true)

        // A call through the daemon, stopped by Ctrl-C on the command: it hangs up and reports.
        let call = try CarrierProcess(
            ["call", bobUser, "--duration", "120", "--json", "--data", root + "/alice"])
        defer { call.interrupt() }
        #expect(await eventually(within: .seconds(60)) { call.stderr.contains("call connected") })
        call.interrupt()
        #expect(await call.waitForExit(timeout: .seconds(20)) == 0, "call: \(call.stderr.suffix(2000))")
        let summary = try #require(json(call.lines.last { $0.contains("callId") }))
        #expect(summary["connected"] as? Bool == true && summary["ok"] as? Bool == true)
        #expect(await listener.waitForLine(containing: "callEnded", timeout: .seconds(10)) != nil)

        // A second node of this identity is refused while the daemon runs.
        let (refused, _, refusal) = try await CarrierProcess.run(["listen", "--data", root + "/alice"] + common)
        #expect(refused == 1 && refusal.contains("a daemon runs"))

        // Without the daemon (stopped: its socket goes), the command joins the network itself.
        daemon.interrupt()
        #expect(await daemon.waitForExit(timeout: .seconds(20)) == 0)
        #expect(!FileManager.default.fileExists(atPath: socket))
        // A new DHT key for Alice: Bob's toxcore must find it through the onion, which on
        // this small network with the daemon's node just dead took over 60 s once.
        let (alone, _, aloneError) = try await CarrierProcess.run(
            ["message", bobUser, "hello without it", "--wait-receipt", "110", "--data", root + "/alice"] + common,
            timeout: .seconds(130))
        #expect(alone == 0, "message: \(aloneError)")
        #expect(await listener.waitForLine(containing: "hello without it", timeout: .seconds(10)) != nil)
    }

    /// Sends one line on the control socket; the first line back.
    static func request(_ path: String, _ line: String) throws -> String? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(connected == 0)
        let bytes = Array((line + "\n").utf8)
        try #require(bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) } == bytes.count)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !received.contains(UInt8(ascii: "\n")) {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += chunk[..<count]
        }
        return String(decoding: received.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }
}
