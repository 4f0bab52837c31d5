import Foundation
import TestSupport
import Testing

/// Offline delivery as a user meets it: `carrier message` to a friend who is
/// not online leaves the message on Express and exits 0, on its own and
/// through a daemon, and the friend gets both when it comes back. Express is
/// two nodes on one PostgreSQL database: the messages go in through the
/// first, which is then killed, and come out through the second, once each.
/// Slow: about a minute (befriending, then two joins).
@Suite(.timeLimit(.minutes(5))) struct OfflineCommandTests {
    @Test func aMessageToAnOfflineFriendIsStoredAndArrivesWhenItIsBack() async throws {
        let root = temporaryDirectory("offline")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let network = try await LocalNetwork()
        let database = try await PostgresServer()
        let express = try ["first", "second"].map { _ in
            try CarrierProcess(["express", "--host", "127.0.0.1", "--db", database.url()])
        }
        var entries: [String] = []
        for node in express {
            entries.append(try #require(await node.waitForLine(containing: "127.0.0.1:", timeout: .seconds(20))))
        }
        // One database, one key: clients trust either node.
        #expect(Set(entries.map { $0.split(separator: ":").last }).count == 1)
        let common = network.common + entries.flatMap { ["--express", $0] }
        let (bobAddress, bobUser) = try await LocalNetwork.identity(root + "/bob")

        // Friends first, both online; then Bob goes away.
        var bob = try CarrierProcess(["listen", "--accept-friends", "--json", "--data", root + "/bob"] + common)
        let (added, _, addError) = try await CarrierProcess.run(
            ["friend", "add", bobAddress, "--wait", "90", "--json", "--data", root + "/alice"] + common,
            timeout: .seconds(120))
        #expect(added == 0, "friend add failed: \(addError.suffix(500))")
        bob.interrupt()
        #expect(await bob.waitForExit(timeout: .seconds(20)) == 0)

        // On its own: stored offline, exit 0, soon after joining.
        let started = ContinuousClock.now
        let (status, lines, stderr) = try await CarrierProcess.run(
            ["message", bobUser, "while you were away", "--json", "--data", root + "/alice"] + common,
            timeout: .seconds(90))
        #expect(status == 0, "message failed: \(stderr.suffix(500))")
        #expect(json(lines.last)?["receipt"] as? String == "offline")
        #expect(ContinuousClock.now - started < .seconds(45))  // the join and the grace, not a 60 s wait

        // Through Alice's daemon: the same.
        let daemon = try CarrierProcess(["daemon", "--json", "--data", root + "/alice"] + common)
        #expect(await daemon.waitForLine(containing: "daemonReady", timeout: .seconds(30)) != nil)
        let (viaDaemon, daemonLines, daemonError) = try await CarrierProcess.run(
            ["message", bobUser, "and once more", "--json", "--data", root + "/alice"], timeout: .seconds(90))
        #expect(viaDaemon == 0, "message through the daemon failed: \(daemonError.suffix(500))")
        #expect(json(daemonLines.last)?["receipt"] as? String == "offline")
        daemon.interrupt()
        _ = await daemon.waitForExit(timeout: .seconds(20))

        // The node that took both messages dies; Bob comes back and gets both
        // through the other, marked offline, once each.
        kill(express[0].process.processIdentifier, SIGKILL)
        _ = await express[0].waitForExit(timeout: .seconds(10))
        bob = try CarrierProcess(["listen", "--json", "--data", root + "/bob"] + common)
        for text in ["while you were away", "and once more"] {
            let message = json(await bob.waitForLine(containing: text, timeout: .seconds(60)))
            #expect(message?["offline"] as? Bool == true, "\(text) not received: \(bob.stderr.suffix(500))")
        }
        bob.interrupt()
        _ = await bob.waitForExit(timeout: .seconds(20))
        for text in ["while you were away", "and once more"] {
            #expect(bob.lines.filter { $0.contains(text) }.count == 1, "\(text) delivered more than once")
        }
        express[1].interrupt()
        _ = await express[1].waitForExit(timeout: .seconds(10))
        await database.stop()
        network.node.interrupt()
    }
}
