import CarrierNode
import ExpressServer
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

    /// Credentials as an Express node issues them (`TurnIssuer`), but expired:
    /// coturn refuses them, so a relay-only connection never forms.
    @Test func anExpiredCredentialIsRefusedByCoturn() async throws {
        let turn = try await CoturnServer()
        let root = temporaryDirectory("turn-expired")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let user = try #require(UserId(publicKey: [UInt8](repeating: 9, count: 32)))
        let now = Int64(Date().timeIntervalSince1970)
        let expired = TurnIssuer(urls: [], secret: turn.secret, lifetimeSeconds: -60).credentials(for: user, now: now)
        let valid = TurnIssuer(urls: [], secret: turn.secret).credentials(for: user, now: now)
        #expect(expired.username == "\(now - 60):\(user)")
        let file = try WiredPeers.randomFile(root, megabytes: 1)
        for (credentials, shouldConnect) in [(expired, false), (valid, true)] {
            let (status, _) = try await WiredPeers.run(
                WiredPeers.carrier([
                    "rtc", "offer", "--relay-only", "--host-ip", "127.0.0.1", "--turn", "turn:127.0.0.1:\(turn.port)",
                    "--turn-user", credentials.username, "--turn-pass", credentials.credential, "--send-file", file,
                    "--timeout", "8",
                ]),
                WiredPeers.carrier([
                    "rtc", "answer", "--host-ip", "127.0.0.1", "--receive-dir", root + "/in-\(shouldConnect)",
                    "--timeout", "8",
                ]), logs: root + "/log")
            #expect((status == 0) == shouldConnect, "relay with \(shouldConnect ? "valid" : "expired") credentials")
        }
        await turn.stop()
    }
}
