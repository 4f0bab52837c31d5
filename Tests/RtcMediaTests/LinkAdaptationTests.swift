import Foundation
import RtcMediaFiles
import RtcPeer
import TestSupport
import Testing

@testable import RtcMedia

/// Media that adapts to the link, through the relay's bottleneck: a noisy
/// 640x480 picture encoded in real time. Heavy on two cores, so these run in
/// a test group of their own (`links`, scripts/test_groups.py), one at a
/// time, beside nothing timing-sensitive.
@Suite(.serialized) struct LinkAdaptationTests {
    /// A picture too large for the link: 640x480 at 30 fps under heavy noise
    /// and a stereo tone through 400 kbit/s with a 200 ms queue (the
    /// congestion issue's scenario, 16 s of it). The sender starts at a size
    /// its first estimate can carry and shrinks its pictures further when the
    /// encoder's quantizer says they are too large (`ResolutionLadder`),
    /// instead of sending coarse, late frames at full size; the frame rate
    /// stays, and the queue does not overflow. The bars are the issue's:
    /// five sixths of the frames, no gap over 0.5 s, the audio whole, at
    /// most 5% of packets dropped at the bottleneck, audio latency p95 under
    /// 150 ms. (Before the ladder: 424 of 481 frames, 194 packets dropped in
    /// the first 6 s, a gap of 0.92 s.)
    @Test func aSenderShrinksItsPicturesToFitASlowLink() async throws {
        let link = try NoisyLink(bitsPerSecond: 400_000)
        defer { link.close() }
        let (video, relay) = (link.video, link.relay)
        let seconds = 16.0
        let result = try await MediaCallTests.call(
            audio: MediaChecks.mediaFile("tone-440-660.wav"), video: video, seconds: seconds, relay: relay)
        defer { try? FileManager.default.removeItem(atPath: result.directory) }
        let sent = try #require(result.sent.first { $0.kind == "video" })
        let received = try #require(result.received.first { $0.kind == "video" })
        let audio = try #require(result.received.first { $0.kind == "audio" })
        let counts = relay.currentCounts
        let frames = try Y4mFile(path: result.directory + "/video.y4m")
        let sentAudio = try #require(result.sent.first { $0.kind == "audio" })
        let videoWait = sent.totalPacketSendDelay / Double(max(sent.packetsSent, 1))
        let audioWait = sentAudio.totalPacketSendDelay / Double(max(sentAudio.packetsSent, 1))
        let size = "\(sent.encodedWidth ?? 0)x\(sent.encodedHeight ?? 0)"
        print(
            "640x480 noisy through 400 kbit/s: encoded at \(size) at the end, \(sent.framesSent) frames sent, "
                + "\(frames.frameCount) recorded (\(frames.width)x\(frames.height)), target \(sent.targetBitrate ?? 0), "
                + "dropped \(counts.dropped) of \(counts.dropped + counts.forwarded), freezes \(received.freezes), "
                + "longest gap \(received.longestFrameGap ?? -1) s, audio \(audio.seconds) s, "
                + "latency p95 \(audio.latencyP95 ?? -1) s, packets waited \(videoWait) s (video), \(audioWait) s (audio)"
        )
        #expect((sent.encodedWidth ?? 640) < 640, "still encoding at full size")
        // The pacer spreads frames (video packets wait a little) and holds no backlog; audio goes at once.
        #expect(videoWait > 0 && videoWait < 0.1, "video packets waited \(videoWait) s on average")
        #expect(audioWait < 0.005, "audio packets waited \(audioWait) s on average")
        #expect(Double(frames.frameCount) >= seconds * 30 * 5 / 6, "\(frames.frameCount) frames recorded")
        #expect((received.longestFrameGap ?? 1) < 0.5)
        #expect(audio.seconds >= seconds - 0.5)
        #expect((audio.latencyP95 ?? 1) < 0.15)
        let packets = counts.dropped + counts.forwarded
        #expect(Double(counts.dropped) <= 0.05 * Double(packets), "\(counts.dropped) of \(packets) dropped")
    }

    /// The congestion issue's recovery scenario: 2 Mbit/s, down to 300 kbit/s
    /// for 10 s, and back. The target falls with the link, and within 5 s of
    /// the link's return it is back to at least 80% of where it stood before
    /// the drop, and at most of the link (the issue's bar): probes (padding
    /// bursts, `ProbeBurst`) find the returned capacity at once instead of growing 8% a second (without them: 0.2
    /// Mbit/s 5 s after). "Where it stood" and not the link's 2 Mbit/s: a
    /// sender proves no more than its encoder sends (the target grows at most
    /// to 1.5 times what the peer acknowledged). Each level is the highest the
    /// target reached in the 2 s before the drop and in the 5 s after the
    /// return, sampled every 100 ms: an app-limited sender's target is a saw
    /// (any sign of a queue cuts it to 0.85 of what was acknowledged), so one
    /// instant says little.
    @Test func theTargetRecoversWithinFiveSecondsOfTheLinksReturn() async throws {
        let link = try NoisyLink(bitsPerSecond: 2_000_000)
        defer { link.close() }
        let (video, relay) = (link.video, link.relay)
        let targets = TargetTimeline()
        /// The highest target over the next `seconds` (the scenario's clock: samples, not waits for events).
        @Sendable func highest(_ sender: PeerConnection, over seconds: Double) async -> Double {
            var best = 0.0
            for _ in 0..<Int(seconds * 10) {
                best = max(best, await sender.stats().congestion?.targetBitrate ?? 0)
                try? await Task.sleep(for: .milliseconds(100))
            }
            return best
        }
        let result = try await MediaCallTests.call(
            audio: MediaChecks.mediaFile("tone-440-660.wav"), video: video, seconds: 23, relay: relay
        ) { _, _, sender in
            try? await Task.sleep(for: .seconds(6))
            targets.note("before", await highest(sender, over: 2))
            relay.setBottleneck(bitsPerSecond: 300_000, queueMilliseconds: 200)
            try? await Task.sleep(for: .seconds(9))
            targets.note("low", await highest(sender, over: 1))
            relay.setBottleneck(bitsPerSecond: 2_000_000, queueMilliseconds: 200)
            targets.note("after", await highest(sender, over: 5))
        }
        defer { try? FileManager.default.removeItem(atPath: result.directory) }
        let before = try #require(targets.value("before"))
        let low = try #require(targets.value("low"))
        let after = try #require(targets.value("after"))
        print(
            "2 Mbit/s, 300 kbit/s for 10 s, back: target up to \(Int(before)) before, \(Int(low)) at the end of "
                + "the drop, \(Int(after)) within 5 s of the return; video at \(result.sent.map { "\($0.encodedWidth ?? 0)" })"
        )
        #expect(before > 600_000, "the target only reached \(before) on 2 Mbit/s")
        #expect(low < 400_000, "the target stayed at \(low) on 300 kbit/s")
        // The issue's bar: 80% of where it stood, but not above the link (a
        // start probe can overestimate it: 2.4-2.5 Mbit/s on this 2 Mbit/s
        // link in some runs). A recovery probe counts the video sent beside
        // it, so it measures the link and not what the video leaves of it:
        // 2.05-2.09 Mbit/s within 5 s in three runs, where the probes alone
        // had stopped at 1.40 (0.70) and this test asked for half.
        // LINK_RECOVERY_BAR sets another share.
        let reference = min(before, 2_000_000)
        let bar = ProcessInfo.processInfo.environment["LINK_RECOVERY_BAR"].flatMap(Double.init) ?? 0.8
        #expect(after >= bar * reference, "target \(after) within 5 s of the link's return, \(before) before")
    }

    /// A peer that takes only REMB, as aiortc does: no transport-wide
    /// feedback, so the receiver estimates the path from the video's arrivals
    /// (`ReceiveSideEstimator`) and tells the sender in REMBs, which the
    /// sender's target honours. Through 250 kbit/s with a 200 ms queue, a
    /// noisy 640x480 picture that would take over 500 kbit/s: after the first
    /// 6 s, at most 5% dropped at the bottleneck.
    @Test func aSenderThatHearsOnlyRembFitsTheLink() async throws {
        let link = try NoisyLink(bitsPerSecond: 250_000)
        defer { link.close() }
        let (video, relay) = (link.video, link.relay)
        let settled = SettledCounts()
        let receiverSaid = Locked<PeerStats?>(nil)
        let result = try await MediaCallTests.call(
            audio: MediaChecks.mediaFile("tone-440-660.wav"), video: video, seconds: 14, relay: relay, rembOnly: true
        ) { answerer, _, _ in
            // The counts 6 s in: what follows is the settled call (a measurement window, not a wait for an event).
            try? await Task.sleep(for: .seconds(6))
            settled.set(relay.currentCounts)
            let stats = await answerer.stats()
            receiverSaid.withLock { $0 = stats }
        }
        defer { try? FileManager.default.removeItem(atPath: result.directory) }
        let sent = try #require(result.sent.first { $0.kind == "video" })
        let receiver = try #require(receiverSaid.withLock { $0 })
        let early = try #require(settled.value)
        let total = relay.currentCounts
        let dropped = total.dropped - early.dropped
        let packets = dropped + total.forwarded - early.forwarded
        print(
            "REMB only, 250 kbit/s: \(receiver.rembsSent) REMBs by 6 s, estimate \(receiver.estimateSentInRemb ?? 0), "
                + "video target \(sent.targetBitrate ?? 0) at \(sent.encodedWidth ?? 0) wide, dropped \(early.dropped) "
                + "in the first 6 s, then \(dropped) of \(packets)")
        #expect(receiver.congestion == nil || receiver.congestion?.feedbacksReceived == 0)
        #expect(receiver.rembsSent >= 5, "\(receiver.rembsSent) REMBs")
        #expect((receiver.estimateSentInRemb ?? .infinity) < 250_000)
        #expect((sent.targetBitrate ?? .max) < 250_000, "video target \(sent.targetBitrate ?? 0)")
        #expect(Double(dropped) <= 0.05 * Double(max(packets, 1)), "\(dropped) of \(packets) dropped after 6 s")
    }
}

/// Targets noted at points of a scenario, read after it.
final class TargetTimeline: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Double] = [:]
    func note(_ name: String, _ value: Double?) { lock.withLock { values[name] = value } }
    func value(_ name: String) -> Double? { lock.withLock { values[name] } }
}

/// What each test here sends through: a noisy 640x480 picture at 30 fps (2 s,
/// looped by the sender) and a relay whose bottleneck carries `bitsPerSecond`
/// with a 200 ms queue. `close()` stops the relay and removes the picture.
struct NoisyLink {
    let video: String
    let relay: UdpRelay

    init(bitsPerSecond: Double) throws {
        video = try MediaChecks.noisyVideo(width: 640, height: 480, framesPerSecond: 30, seconds: 2)
        do { relay = try UdpRelay() } catch {
            try? FileManager.default.removeItem(atPath: (video as NSString).deletingLastPathComponent)
            throw error
        }
        relay.setBottleneck(bitsPerSecond: bitsPerSecond, queueMilliseconds: 200)
    }

    func close() {
        relay.stop()
        try? FileManager.default.removeItem(atPath: (video as NSString).deletingLastPathComponent)
    }
}
