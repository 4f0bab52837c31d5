import Foundation
import TestSupport
import Testing

/// `carrier session`, `carrier forward` and `carrier listen --sessions
/// --service` as separate processes on a local network (slow: each process
/// joins toxcore, ~10 s).
@Suite(.timeLimit(.minutes(5))) struct SessionCommandTests {
    @Test func pipeAStreamAndForwardAPortToAFriendsService() async throws {
        let root = temporaryDirectory("cli-session")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/www", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/in", withIntermediateDirectories: true)
        let page = Data((0..<5_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
        try page.write(to: URL(fileURLWithPath: root + "/www/page.bin"))
        let server = try await HttpFileServer(directory: root + "/www")
        defer { Task { await server.stop() } }

        let network = try await LocalNetwork()
        defer { network.node.interrupt() }
        let common = network.common
        let (bobAddress, bobUser) = try await LocalNetwork.identity(root + "/bob")
        let listener = try CarrierProcess(
            [
                "listen", "--accept-friends", "--sessions", "--echo", "--receive-dir", root + "/in", "--max-stream-mb",
                "4",
                "--service", "web=127.0.0.1:\(server.port)", "--json", "--data", root + "/bob",
            ] + common)
        defer { listener.interrupt() }
        let (added, _, addError) = try await CarrierProcess.run(
            ["friend", "add", bobAddress, "--wait", "90", "--data", root + "/alice"] + common, timeout: .seconds(120))
        #expect(added == 0, "friend add failed: \(addError)")

        // A file through `carrier session` and back (the listener echoes and keeps a copy).
        let input = root + "/input.bin"
        let echoed = root + "/echoed.bin"
        let payload = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try payload.write(to: URL(fileURLWithPath: input))
        let command =
            ([ChildProcess.carrierExecutable.path, "session", bobUser, "--json", "--data", root + "/alice"] + common)
            .map { "'\($0)'" }.joined(separator: " ") + " < '\(input)' > '\(echoed)'"
        let session = try ChildProcess(executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", command])
        let status = await session.waitForExit(timeout: .seconds(120))
        #expect(status == 0, "carrier session: \(session.stderr.suffix(4000))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: echoed)) == payload)
        let summary = try #require(json(session.stderr.split(separator: "\n").last.map(String.init)))
        #expect(summary["bytesSent"] as? Int == 3_000_000 && summary["bytesReceived"] as? Int == 3_000_000)
        let taken = try #require(json(await listener.waitForLine(containing: "sessionStream", timeout: .seconds(10))))
        #expect(taken["bytes"] as? Int == 3_000_000)
        let saved = try #require(taken["path"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: saved)) == payload)
        #expect((try FileManager.default.attributesOfItem(atPath: saved)[.posixPermissions] as? Int) == 0o600)

        // A stream past --max-stream-mb is cut, and what was saved of it kept (4 MiB at most).
        let long = root + "/long.bin"
        try Data(count: 6_000_000).write(to: URL(fileURLWithPath: long))
        let longCommand =
            ([ChildProcess.carrierExecutable.path, "session", bobUser, "--json", "--data", root + "/alice"] + common)
            .map { "'\($0)'" }.joined(separator: " ") + " < '\(long)' > /dev/null"
        let longSession = try ChildProcess(executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", longCommand])
        _ = await longSession.waitForExit(timeout: .seconds(120))
        let cut = try #require(
            json(await listener.waitForLine(containing: "passed --max-stream-mb", timeout: .seconds(30))))
        let cutPath = try #require(cut["path"] as? String)
        let kept = try #require(FileManager.default.attributesOfItem(atPath: cutPath)[.size] as? Int)
        #expect(kept > 0 && kept <= 4 << 20, "\(kept) bytes kept of a cut stream")

        // A port forwarded to the friend's web service: a page through it, intact.
        let forward = try CarrierProcess(["forward", bobUser, "web", "--json", "--data", root + "/alice"] + common)
        defer { forward.interrupt() }
        let listening = try #require(json(await forward.waitForLine(containing: "forwarding", timeout: .seconds(90))))
        let port = try #require(listening["port"] as? Int)
        let (curl, _, curlError) = try await Self.curl(
            ["-sS", "--fail", "-o", root + "/page.bin", "http://127.0.0.1:\(port)/page.bin"])
        #expect(curl == 0, "curl: \(curlError)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: root + "/page.bin")) == page)
        #expect(await forward.waitForLine(containing: "connectionClosed", timeout: .seconds(10)) != nil)
        forward.interrupt()
        #expect(await forward.waitForExit(timeout: .seconds(15)) == 0)

        // An unknown service: the connection is reset and the reason printed.
        let wrong = try CarrierProcess(["forward", bobUser, "mail", "--json", "--data", root + "/alice"] + common)
        defer { wrong.interrupt() }
        let other = try #require(json(await wrong.waitForLine(containing: "forwarding", timeout: .seconds(90))))
        let (failed, _, _) = try await Self.curl(["-sS", "http://127.0.0.1:\(other["port"] as? Int ?? 0)/"])
        #expect(failed != 0)
        let refused = json(await wrong.waitForLine(containing: "connectionRefused", timeout: .seconds(10)))
        #expect((refused?["reason"] as? String)?.contains("no service \"mail\" here") == true)
        wrong.interrupt()
        _ = await wrong.waitForExit(timeout: .seconds(15))
    }

    static func curl(_ arguments: [String]) async throws -> (Int32?, [String], String) {
        let process = try ChildProcess(executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: arguments)
        let status = await process.waitForExit(timeout: .seconds(60))
        return (status, process.lines, process.stderr)
    }
}
