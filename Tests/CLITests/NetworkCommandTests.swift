import Foundation
import TestSupport
import Testing

/// Several `carrier` processes on one local network (slow: ~30 s, toxcore joins take ~8 s).
@Suite(.timeLimit(.minutes(5))) struct NetworkCommandTests {
    @Test func nodeListenFriendAddAndMessageAcrossProcesses() async throws {
        let root = temporaryDirectory("net")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let network = try await LocalNetwork()
        let (node, common) = (network.node, network.common)

        let (bobAddress, bobUser) = try await LocalNetwork.identity(root + "/bob")

        let listener = try CarrierProcess(
            ["listen", "--accept-friends", "--receive-dir", root + "/inbox", "--json", "--data", root + "/bob"] + common
        )
        let adder = try CarrierProcess(
            [
                "friend", "add", bobAddress, "--hello", "hi from the test", "--wait", "90", "--json", "--data",
                root + "/alice",
            ] + common)
        #expect(await adder.waitForExit(timeout: .seconds(120)) == 0, "friend add failed: \(adder.stderr)")
        let request = json(await listener.waitForLine(containing: "friendRequest", timeout: .seconds(10)))
        #expect(request?["hello"] as? String == "hi from the test")

        let (status, lines, stderr) = try await CarrierProcess.run(
            ["message", bobUser, "hello over the CLI", "--wait-receipt", "60", "--json", "--data", root + "/alice"]
                + common,
            timeout: .seconds(120))
        #expect(status == 0, "message failed: \(stderr)")
        #expect(json(lines.last)?["receipt"] as? String == "delivered")
        let message = json(await listener.waitForLine(containing: "hello over the CLI", timeout: .seconds(10)))
        #expect(message?["event"] as? String == "message")

        // An invite: `listen` replies status 0.
        let (invited, inviteLines, inviteError) = try await CarrierProcess.run(
            ["invite", bobUser, "shall we?", "--json", "--data", root + "/alice"] + common, timeout: .seconds(120))
        #expect(invited == 0, "invite failed: \(inviteError.suffix(500))")
        #expect(json(inviteLines.last)?["status"] as? Int == 0)

        // A file to the friend over the node, checked at the other end.
        let file = root + "/photo.bin"
        try Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: URL(fileURLWithPath: file))
        let (sent, sentLines, sentError) = try await CarrierProcess.run(
            ["send-file", bobUser, file, "--json", "--data", root + "/alice"] + common, timeout: .seconds(120))
        #expect(sent == 0, "send-file failed: \(sentError.suffix(1000))")
        let result = json(sentLines.last)
        #expect(result?["sha256Match"] as? Bool == true && result?["bytes"] as? Int == 3_000_000)
        #expect(result?["MBps"] is Double || result?["MBps"] is Int)
        #expect(sentError.contains("100% 3000000/3000000 bytes"))
        let stored = json(await listener.waitForLine(containing: "\"completed\"", timeout: .seconds(10)))
        #expect(stored?["path"] as? String == root + "/inbox/photo.bin")
        #expect(FileManager.default.contentsEqual(atPath: file, andPath: root + "/inbox/photo.bin"))

        // The friend list survives in Alice's data directory.
        let (_, friends, _) = try await CarrierProcess.run(["friend", "list", "--json", "--data", root + "/alice"])
        #expect(friends.compactMap { json($0)?["userId"] as? String } == [bobUser])

        // Ctrl-C stops both long-running commands cleanly and quickly.
        listener.interrupt()
        node.interrupt()
        #expect(await listener.waitForExit(timeout: .seconds(10)) == 0)
        #expect(await node.waitForExit(timeout: .seconds(10)) == 0)
    }

    /// Two friends in a group: one creates it and invites, the other joins; each
    /// hears the other's message and the title.
    @Test func groupsAcrossProcesses() async throws {
        let root = temporaryDirectory("group")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let network = try await LocalNetwork()
        defer { network.node.interrupt() }
        let common = network.common
        let bob = try await LocalNetwork.identity(root + "/bob")
        let aliceUser = try await LocalNetwork.identity(root + "/alice").userId
        let listener = try CarrierProcess(["listen", "--accept-friends", "--data", root + "/bob"] + common)
        // A hello that would clear the listener's screen and print a line of its own.
        let (added, _, addError) = try await CarrierProcess.run(
            [
                "friend", "add", bob.address, "--hello", "hi\u{1B}[2J\nfriend added FAKE", "--wait", "90", "--data",
                root + "/alice",
            ]
                + common, timeout: .seconds(120))
        #expect(added == 0, "friend add failed: \(addError.suffix(500))")
        let request = await listener.waitForLine(containing: "friend request from", timeout: .seconds(10))
        #expect(request?.hasSuffix(": hi\\u{1B}[2J\\nfriend added FAKE") == true, "\(request ?? "none")")
        #expect(!listener.lines.contains { $0.contains("\u{1B}") || $0.hasPrefix("friend added FAKE") })
        listener.interrupt()
        _ = await listener.waitForExit(timeout: .seconds(10))

        let joiner = try CarrierProcess(
            [
                "group", "join", "--from", aliceUser, "--say", "hi from bob", "--duration", "60", "--json", "--data",
                root + "/bob",
            ] + common)
        let creator = try CarrierProcess(
            [
                "group", "create", "--title", "the test", "--invite", bob.userId,
                "--duration", "60", "--json", "--data", root + "/alice",
            ] + common)
        defer {
            joiner.interrupt()
            creator.interrupt()
        }
        // Bob says his line once Alice is there; Alice answers on stdin once she heard him.
        let heardByAlice = await creator.waitForLine(containing: "hi from bob", timeout: .seconds(90))
        creator.writeLine("hi from alice")
        let heardByBob = await joiner.waitForLine(containing: "hi from alice", timeout: .seconds(30))
        #expect(
            json(heardByBob)?["event"] as? String == "groupMessage",
            "bob: \(joiner.lines.joined(separator: "\n").suffix(800)) \(joiner.stderr.suffix(300))")
        #expect(json(heardByAlice)?["from"] as? String == bob.userId)
        let title = await joiner.waitForLine(containing: "groupTitle", timeout: .seconds(10))
        #expect(json(title)?["title"] as? String == "the test")
    }

    @Test func demoRunsTheWholeNodeStory() async throws {
        let recordings = temporaryDirectory("demo-recordings")
        defer { try? FileManager.default.removeItem(atPath: recordings) }
        let (status, lines, stderr) = try await CarrierProcess.run(
            ["demo", "--json", "--record", recordings], timeout: .seconds(120))
        #expect(status == 0, "demo failed: \(stderr)")
        let summary = try #require(json(lines.last))
        #expect(summary["ok"] as? Bool == true)
        #expect(summary["recordings"] as? String == recordings)
        #expect(FileManager.default.fileExists(atPath: recordings + "/bob-heard/video.y4m"))
        for key in [
            "joinMs", "friendMs", "messageMs", "bulkMs", "bulkMBps", "fileToFriendMs", "fileToFriendMBps",
            "offlineDeliverMs", "callMs",
            "fileMs",
            "mediaMs", "verifyMs",
        ] {
            #expect(summary[key] is Double || summary[key] is Int, "summary lacks \(key)")
        }
    }

    @Test func onlineCommandsWithoutBootstrapSayWhatToDo() async throws {
        let data = temporaryDirectory("nobootstrap")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (status, _, stderr) = try await CarrierProcess.run(["listen", "--data", data])
        #expect(status == 2)
        #expect(stderr.contains("--bootstrap"))
    }
}
