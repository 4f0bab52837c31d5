import Foundation
import TestSupport
import Testing

/// Relay-only connections through a coturn started for the test on 127.0.0.1
/// (REST shared secret, loopback peers allowed): the 50 MB file over TURN/UDP,
/// and a smaller one over TURN/TCP.
@Suite(.serialized, .timeLimit(.minutes(5))) struct TurnRelayTests {
    func transfer(megabytes: Int, transport: String) async throws {
        let turn = try await CoturnServer()
        let root = temporaryDirectory("turn-\(transport)")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try WiredPeers.randomFile(root, megabytes: megabytes)
        let (user, password) = turn.credentials()
        let url = "turn:127.0.0.1:\(turn.port)" + (transport == "tcp" ? "?transport=tcp" : "")
        let (status, answerStatus) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "offer", "--relay-only", "--host-ip", "127.0.0.1", "--turn", url, "--turn-user", user,
                "--turn-pass",
                password, "--send-file", file, "--stats", root + "/ours.json",
            ]),
            WiredPeers.carrier([
                "rtc", "answer", "--host-ip", "127.0.0.1", "--receive-dir", root + "/in", "--stats",
                root + "/theirs.json",
            ]), logs: root + "/log")
        await turn.stop()
        #expect(status == 0 && answerStatus == 0)
        let summary = try #require(WiredPeers.summary(root + "/ours.json"))
        let pair = summary["selectedPair"] as? [String: String]
        #expect(pair?["local"]?.contains("typ relay") == true, "selected pair: \(String(describing: pair))")
        #expect(summary["transferOk"] as? Bool == true)
        #expect(WiredPeers.sameBytes(file, root + "/in/payload.bin"))
        print("TURN/\(transport): \(summary["MBps"] ?? "?") MB/s")  // for the notes
    }

    @Test func fiftyMegabytesOverTurnUdp() async throws { try await transfer(megabytes: 50, transport: "udp") }

    @Test func fileOverTurnTcp() async throws { try await transfer(megabytes: 5, transport: "tcp") }
}
