import Foundation
import TestSupport
import Testing

/// Interop with aiortc 1.16 (slow suite: real processes, 50 MB transfers).
/// Both stacks gather on 127.0.0.1 only; signaling goes over their stdin/stdout.
@Suite(.serialized, .timeLimit(.minutes(5))) struct AiortcFileTests {
    @Test func carrierOffersAndSendsFiftyMegabytesToAiortc() async throws {
        let root = temporaryDirectory("aio-send")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try WiredPeers.randomFile(root, megabytes: 50)
        let (status, theirStatus) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "offer", "--host-ip", "127.0.0.1", "--send-file", file, "--stats", root + "/ours.json",
            ]),
            WiredPeers.aiortc(["answer", "--receive-dir", root + "/in", "--stats", root + "/theirs.json"]),
            logs: root + "/log")
        #expect(status == 0 && theirStatus == 0)
        let summary = try #require(WiredPeers.summary(root + "/ours.json"))
        #expect(summary["transferOk"] as? Bool == true && summary["bytes"] as? Int == 50 << 20)
        #expect(WiredPeers.summary(root + "/theirs.json")?["ok"] as? Bool == true)
        #expect(WiredPeers.sameBytes(file, root + "/in/payload.bin"))
        print("carrier → aiortc: \(summary["MBps"] ?? "?") MB/s, setup \(summary["setupMs"] ?? "?") ms")  // for the notes
    }

    @Test func aiortcOffersAndSendsFiftyMegabytesToCarrier() async throws {
        let root = temporaryDirectory("aio-receive")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try WiredPeers.randomFile(root, megabytes: 50)
        let (status, theirStatus) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "answer", "--host-ip", "127.0.0.1", "--receive-dir", root + "/in", "--stats",
                root + "/ours.json",
            ]),
            WiredPeers.aiortc(["offer", "--send-file", file, "--stats", root + "/theirs.json"]), logs: root + "/log")
        #expect(status == 0 && theirStatus == 0)
        #expect(WiredPeers.summary(root + "/ours.json")?["transferOk"] as? Bool == true)
        #expect(WiredPeers.summary(root + "/theirs.json")?["ok"] as? Bool == true)
        #expect(WiredPeers.sameBytes(file, root + "/in/payload.bin"))
    }

    /// aiortc echoes everything: our file comes back to us, and our own
    /// receiver's acknowledgement (echoed too) completes the send.
    @Test func echoThroughAiortcReturnsTheSameBytes() async throws {
        let root = temporaryDirectory("aio-echo")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try WiredPeers.randomFile(root, megabytes: 2)
        let (status, _) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "offer", "--host-ip", "127.0.0.1", "--send-file", file, "--receive-dir", root + "/back",
                "--stats",
                root + "/ours.json",
            ]), WiredPeers.aiortc(["answer", "--echo"]), logs: root + "/log")
        #expect(status == 0)
        #expect(WiredPeers.sameBytes(file, root + "/back/payload.bin"))
    }

    @Test func nonTrickleOfferWorksWithAiortc() async throws {
        let root = temporaryDirectory("aio-notrickle")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try WiredPeers.randomFile(root, megabytes: 1)
        let (status, _) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "offer", "--no-trickle", "--host-ip", "127.0.0.1", "--send-file", file, "--stats",
                root + "/ours.json",
            ]),
            WiredPeers.aiortc(["answer", "--receive-dir", root + "/in"]), logs: root + "/log")
        #expect(status == 0)
        // The offer carried every candidate and end-of-candidates, and no candidate signal followed it.
        let signals = try String(contentsOfFile: root + "/log.first.out", encoding: .utf8).split(separator: "\n")
        let offer = try #require(signals.first { $0.contains("\"offer\"") })
        #expect(offer.contains("a=candidate:") && offer.contains("a=end-of-candidates"))
        #expect(!signals.contains { $0.contains("\"candidate\"") })
        #expect(WiredPeers.sameBytes(file, root + "/in/payload.bin"))
    }
}
