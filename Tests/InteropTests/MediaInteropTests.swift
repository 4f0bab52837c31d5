import Foundation
import RtcMediaFiles
import TestSupport
import Testing

/// Media from the files in media/ through `carrier rtc` to another carrier and
/// to aiortc, and from aiortc to carrier; each recording is checked against its
/// source (slow suite: real processes, real-time media).
@Suite(.serialized, .timeLimit(.minutes(3))) struct MediaInteropTests {
    static let wav = MediaChecks.mediaFile("tone-440-660.wav")
    static let y4m = MediaChecks.mediaFile("testsrc.y4m")

    /// The tones in the right channels and the length within `tolerance` seconds.
    static func checkAudio(_ path: String, seconds: Double, tolerance: Double = 0.1) throws {
        let audio = try WavFile(path: path).audio
        let length = MediaChecks.seconds(audio)
        #expect(abs(length - seconds) <= tolerance, "\(path): \(length) s, expected \(seconds)")
        #expect(MediaChecks.tonePower(audio, channel: 0, frequency: 440, skipSeconds: 0.5) > 0.7)
        #expect(MediaChecks.tonePower(audio, channel: 1, frequency: 660, skipSeconds: 0.5) > 0.7)
    }

    /// Frame count within 2% (+ `slack` frames) of `frames`, and PSNR ≥ 30 dB against the looped source.
    static func checkVideo(_ path: String, frames: Int, slack: Int = 0) throws {
        let recorded = try Y4mFile(path: path).frames
        let source = try Y4mFile(path: y4m).frames
        let allowed = Double(frames) * 0.02 + Double(slack)
        #expect(
            abs(Double(recorded.count - frames)) <= allowed, "\(path): \(recorded.count) frames, expected \(frames)")
        let psnr = MediaChecks.meanPsnr(received: recorded, source: source)  // taken as looping
        #expect(psnr >= 30, "\(path): PSNR \(psnr) dB")
    }

    @Test func carrierToCarrierThroughTheCommandLine() async throws {
        let root = temporaryDirectory("media-cli")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (status, theirStatus) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "offer", "--host-ip", "127.0.0.1", "--audio", Self.wav, "--video", Self.y4m, "--loop",
                "--duration", "3", "--stats", root + "/ours.json",
            ]),
            WiredPeers.carrier([
                "rtc", "answer", "--host-ip", "127.0.0.1", "--record", root + "/rec", "--stats", root + "/theirs.json",
            ]), logs: root + "/log")
        #expect(status == 0 && theirStatus == 0)
        try Self.checkAudio(root + "/rec/audio.wav", seconds: 3)
        try Self.checkVideo(root + "/rec/video.y4m", frames: 45)
        #expect(MediaChecks.ffprobeDuration(root + "/rec/video.ivf").map { abs($0 - 3) < 0.1 } == true)
        #expect(MediaChecks.ffprobeDuration(root + "/rec/audio.opus").map { abs($0 - 3) < 0.1 } == true)
        let summary = try #require(WiredPeers.summary(root + "/theirs.json"))
        #expect((summary["recordings"] as? [String])?.count == 4)
        // RTX agreed: the offerer's probe padding (and any NACK's answer) goes on its RTX stream, and arrives.
        let ours = try #require(WiredPeers.summary(root + "/ours.json"))
        let sentOnRtx = (ours["rtx"] as? [String: Any])?["sent"] as? Int ?? 0
        let receivedOnRtx = (summary["rtx"] as? [String: Any])?["received"] as? Int ?? 0
        #expect(
            sentOnRtx > 0 && receivedOnRtx > 0 && receivedOnRtx <= sentOnRtx,
            "RTX: \(sentOnRtx) sent, \(receivedOnRtx) received")
        print("RTX between two carrier rtc: \(sentOnRtx) sent, \(receivedOnRtx) received")
        // A live stats line every second on stderr.
        let log = try String(contentsOfFile: root + "/log.first.err", encoding: .utf8)
        #expect(log.components(separatedBy: "stats: ").count >= 3)
    }

    /// The call can connect before the offerer's files have opened (a cold
    /// cache, a slow disk): the run still sees it connect, sends, and ends.
    /// The audio comes through a FIFO that is written only once the answerer
    /// has connected, so the offerer's open is still blocked at that moment.
    @Test func offererWhoseFileOpensAfterTheCallConnects() async throws {
        let root = temporaryDirectory("media-late-file")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fifo = root + "/audio.wav"
        #expect(mkfifo(fifo, 0o600) == 0)
        let peers = Task {
            try await WiredPeers.run(
                WiredPeers.carrier([
                    "rtc", "offer", "--host-ip", "127.0.0.1", "--audio", fifo, "--timeout", "30",
                ]),
                WiredPeers.carrier([
                    "rtc", "answer", "--host-ip", "127.0.0.1", "--record", root + "/rec", "--timeout", "30",
                ]), logs: root + "/log")
        }
        let connected = await eventually(within: .seconds(20)) {
            let log = (try? String(contentsOfFile: root + "/log.second.err", encoding: .utf8)) ?? ""
            return log.contains("connection connected")
        }
        #expect(connected)
        // Blocks until the offerer opens its end, then writes the file through.
        let written = Task.detached {
            try Data(contentsOf: URL(fileURLWithPath: Self.wav)).write(to: URL(fileURLWithPath: fifo))
        }
        let (status, theirStatus) = try await peers.value
        try await written.value
        #expect(status == 0 && theirStatus == 0)
        let log = try String(contentsOfFile: root + "/log.first.err", encoding: .utf8)
        #expect(log.contains("offer: connected"))
        try Self.checkAudio(root + "/rec/audio.wav", seconds: 5)
    }

    /// aiortc records with its own decoders; its jitter buffer keeps the last
    /// video frame when the call ends (one frame of slack).
    @Test func carrierSendsAndAiortcRecords() async throws {
        let root = temporaryDirectory("media-to-aiortc")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (status, theirStatus) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "offer", "--host-ip", "127.0.0.1", "--audio", Self.wav, "--video", Self.y4m, "--loop",
                "--duration", "3", "--stats", root + "/ours.json",
            ]),
            WiredPeers.aiortc(["answer", "--record", root + "/rec", "--stats", root + "/theirs.json"]),
            logs: root + "/log")
        #expect(status == 0 && theirStatus == 0)
        try Self.checkAudio(root + "/rec/audio.wav", seconds: 3)
        try Self.checkVideo(root + "/rec/video.y4m", frames: 45, slack: 1)
    }

    @Test func aiortcSendsAndCarrierRecords() async throws {
        let root = temporaryDirectory("media-from-aiortc")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (status, theirStatus) = try await WiredPeers.run(
            WiredPeers.carrier([
                "rtc", "answer", "--host-ip", "127.0.0.1", "--record", root + "/rec", "--stats", root + "/ours.json",
            ]),
            WiredPeers.aiortc([
                "offer", "--play-audio", Self.wav, "--play-video", Self.y4m, "--run-for", "3", "--stats",
                root + "/theirs.json",
            ]), logs: root + "/log")
        #expect(status == 0 && theirStatus == 0)
        // aiortc plays each file once from connection: 2 s of video (30 frames), audio until the bye.
        try Self.checkVideo(root + "/rec/video.y4m", frames: 30, slack: 1)
        let audio = try WavFile(path: root + "/rec/audio.wav").audio
        #expect(MediaChecks.seconds(audio) > 2.5)
        #expect(MediaChecks.tonePower(audio, channel: 0, frequency: 440, skipSeconds: 0.5) > 0.7)
        #expect(MediaChecks.tonePower(audio, channel: 1, frequency: 660, skipSeconds: 0.5) > 0.7)
    }
}
