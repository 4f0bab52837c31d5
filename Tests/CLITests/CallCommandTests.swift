import Foundation
import RtcMediaFiles
import TestSupport
import Testing

/// `carrier call` and `carrier listen --answer` as separate processes on a
/// local network (slow: each process joins toxcore, ~10 s).
@Suite(.timeLimit(.minutes(5))) struct CallCommandTests {
    @Test func callAFriendWithMediaAndAFileThenLoseThePeer() async throws {
        let root = temporaryDirectory("cli-call")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let network = try await LocalNetwork()
        defer { network.node.interrupt() }
        let common = network.common
        let (bobAddress, bobUser) = try await LocalNetwork.identity(root + "/bob")
        let file = root + "/report.bin"
        try Data((0..<1_500_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }).write(to: URL(fileURLWithPath: file))

        let listener = try CarrierProcess(
            [
                "listen", "--accept-friends", "--answer", "--record", root + "/rec", "--receive-dir", root + "/in",
                "--audio", MediaChecks.mediaFile("tone.opus"), "--loop", "--json", "--data", root + "/bob",
            ] + common)
        let (added, _, addError) = try await CarrierProcess.run(
            ["friend", "add", bobAddress, "--wait", "90", "--data", root + "/alice"] + common, timeout: .seconds(120))
        #expect(added == 0, "friend add failed: \(addError)")

        let (status, lines, stderr) = try await CarrierProcess.run(
            [
                "call", bobUser, "--audio", MediaChecks.mediaFile("tone-440-660.wav"), "--video",
                MediaChecks.mediaFile("testsrc.y4m"), "--loop", "--send-file", file, "--duration", "3", "--json",
                "--data", root + "/alice",
            ] + common, timeout: .seconds(120))
        #expect(status == 0, "call failed: \(stderr.suffix(1500))")
        let summary = try #require(json(lines.last))
        let callId = try #require(summary["callId"] as? String)
        #expect(summary["connected"] as? Bool == true && summary["sha256Match"] as? Bool == true)
        #expect(summary["endReason"] as? String == "hangUp" && summary["bytes"] as? Int == 1_500_000)
        let received = (summary["media"] as? [String: Any])?["received"] as? [[String: Any]] ?? []
        #expect(received.contains { $0["kind"] as? String == "audio" && ($0["seconds"] as? Double ?? 0) > 2 })
        #expect(stderr.contains("stats: "))  // the live stats line
        #expect(FileManager.default.contentsEqual(atPath: file, andPath: root + "/in/report.bin"))
        let ended = await listener.waitForLine(containing: "callEnded", timeout: .seconds(10))
        #expect(json(ended)?["endReason"] as? String == "remoteHangUp")
        let recording = try WavFile(path: root + "/rec/\(callId)/audio.wav").audio
        #expect(abs(MediaChecks.seconds(recording) - 3) < 0.3)
        #expect(MediaChecks.tonePower(recording, channel: 1, frequency: 660, skipSeconds: 0.5) > 0.7)

        // A second call, ended with Ctrl-C: a clean hang-up and a summary.
        let interrupted = try CarrierProcess(["call", bobUser, "--json", "--data", root + "/alice"] + common)
        #expect(try await Self.waitUntilConnected(interrupted))
        interrupted.interrupt()
        #expect(await interrupted.waitForExit(timeout: .seconds(15)) == 0)
        #expect(json(interrupted.lines.last)?["endReason"] as? String == "hangUp")

        // A third call; the friend's process is killed mid-call: ICE restarts for the
        // recovery window (4 s), then the call ends as failed, within 10 s.
        let caller = try CarrierProcess(
            ["call", bobUser, "--json", "--recovery", "4", "--data", root + "/alice"] + common)
        let up = try await Self.waitUntilConnected(caller)
        #expect(up, "the third call did not connect: \(caller.stderr.suffix(1000))")
        kill(listener.process.processIdentifier, SIGKILL)
        let killed = ContinuousClock.now
        let exit = await caller.waitForExit(timeout: .seconds(20))
        #expect(ContinuousClock.now - killed < .seconds(10))
        #expect(exit == 1)
        #expect(json(caller.lines.last)?["endReason"] as? String == "failed")
        #expect((json(caller.lines.last)?["endDetail"] as? String)?.contains("recovery window 4 s") == true)
    }

    /// Bounded wait (60 s) for a `carrier call` process to log that its call connected.
    static func waitUntilConnected(_ process: CarrierProcess) async throws -> Bool {
        for _ in 0..<600 {
            if process.stderr.contains("call connected") { return true }
            try await Task.sleep(for: .milliseconds(100))  // polling the caller's log
        }
        return false
    }
}
