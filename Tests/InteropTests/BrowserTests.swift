import Foundation
import TestSupport
import Testing

/// Interop with a browser's libwebrtc: headless Chromium driven by
/// Tests/Interop/browser_peer.py (slow suite: a browser per test). The page
/// forwards only its 127.0.0.1 candidates and we gather on 127.0.0.1 only.
@Suite(.serialized, .timeLimit(.minutes(3))) struct BrowserTests {
    /// samples/browser/index.html, used as its comments tell a person to:
    /// the offer line pasted into `carrier rtc answer --no-trickle --echo
    /// --video …`, its answer pasted back; the page connects, plays the video
    /// and gets its message back (Tests/Interop/browser_sample.py drives it).
    @Test func theBrowserSamplePageTalksToCarrierRtc() async throws {
        let process = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/python3"),
            arguments: [ChildProcess.interopScript("browser_sample.py"), ChildProcess.carrierExecutable.path])
        process.closeInput()
        let status = await process.waitForExit(timeout: .seconds(120))
        try await Task.sleep(for: .milliseconds(100))  // let the pipe handlers drain what was written before exit
        let result = json(process.lines.last)
        #expect(status == 0, "browser sample: \(process.lines.last ?? "") \(process.stderr.suffix(600))")
        #expect(result?["state"] as? String == "connected" && result?["echoed"] as? Bool == true)
    }

    @Test func carrierOffersAndSendsAFileToChromium() async throws {
        let root = temporaryDirectory("browser-send")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try WiredPeers.randomFile(root, megabytes: 5)
        let (status, theirStatus) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "offer", "--host-ip", "127.0.0.1", "--send-file", file, "--stats", root + "/ours.json",
            ]),
            WiredPeers.browser(["answer", "--stats", root + "/theirs.json"]), logs: root + "/log")
        #expect(status == 0 && theirStatus == 0)
        let ours = try #require(WiredPeers.summary(root + "/ours.json"))
        let theirs = try #require(WiredPeers.summary(root + "/theirs.json"))
        #expect(ours["transferOk"] as? Bool == true && ours["bytes"] as? Int == 5 << 20)
        #expect(theirs["receivedOk"] as? Bool == true)
        #expect(theirs["receivedSha256"] as? String == ours["sha256"] as? String)
        // Our side gathers on 127.0.0.1 only. Chromium checks from every interface it
        // has, so the remote may be a peer-reflexive address of this same machine.
        let pair = ours["selectedPair"] as? [String: Any]
        #expect((pair?["local"] as? String)?.contains(" 127.0.0.1 ") == true)
        print("carrier → chromium: \(ours["MBps"] ?? "?") MB/s, setup \(ours["setupMs"] ?? "?") ms")
    }

    /// Chromium offers audio and video from its fake devices plus the data
    /// channel, and sends a file; we answer and receive it.
    @Test func chromiumOffersWithMediaAndSendsAFileToCarrier() async throws {
        let root = temporaryDirectory("browser-receive")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (status, theirStatus) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "answer", "--host-ip", "127.0.0.1", "--receive-dir", root + "/in", "--stats",
                root + "/ours.json",
            ]),
            WiredPeers.browser(["offer", "--media", "--send-bytes", "\(3 << 20)", "--stats", root + "/theirs.json"]),
            logs: root + "/log")
        #expect(status == 0 && theirStatus == 0)
        let ours = try #require(WiredPeers.summary(root + "/ours.json"))
        let theirs = try #require(WiredPeers.summary(root + "/theirs.json"))
        #expect(ours["transferOk"] as? Bool == true)
        #expect(theirs["ackOk"] as? Bool == true)
        #expect(ours["sha256"] as? String == theirs["sentSha256"] as? String)
        let written = try #require(ours["path"] as? String)
        #expect((try? FileManager.default.attributesOfItem(atPath: written)[.size] as? Int) == 3 << 20)
    }

    /// Media both ways with Chromium: its fake camera and microphone to our
    /// recorder, our files to its decoders (counted in its inbound-rtp stats).
    @Test func mediaFlowsBothWaysWithChromium() async throws {
        let root = temporaryDirectory("browser-media")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (status, theirStatus) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "answer", "--host-ip", "127.0.0.1", "--audio", MediaChecks.mediaFile("tone-440-660.wav"),
                "--video", MediaChecks.mediaFile("testsrc.y4m"), "--loop", "--record", root + "/rec", "--stats",
                root + "/ours.json",
            ]),
            WiredPeers.browser(["offer", "--media", "--run-for", "4", "--stats", root + "/theirs.json"]),
            logs: root + "/log")
        #expect(status == 0 && theirStatus == 0)
        let ours = try #require(WiredPeers.summary(root + "/ours.json"))
        let received = (ours["media"] as? [String: Any])?["received"] as? [[String: Any]] ?? []
        let video = received.first { $0["kind"] as? String == "video" }
        let audio = received.first { $0["kind"] as? String == "audio" }
        #expect((video?["framesDecoded"] as? Double ?? 0) >= 30, "video from Chromium: \(String(describing: video))")
        #expect((audio?["seconds"] as? Double ?? 0) >= 2, "audio from Chromium: \(String(describing: audio))")
        let inbound = try #require(WiredPeers.summary(root + "/theirs.json")?["inbound"] as? [String: Any])
        #expect(
            (inbound["audio"] as? Int ?? 0) > 50 && (inbound["video"] as? Int ?? 0) > 30, "Chromium received \(inbound)"
        )
    }
}
