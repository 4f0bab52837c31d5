import Foundation
import RtcCalls
import RtcCodecs
import RtcMedia
import TestSupport
import Testing

/// Media the application makes and takes itself: pushed PCM and pictures go
/// out, decoded media comes back through a sink, and a slow sink drops
/// rather than holds the call back.
@Suite(.serialized) struct LiveMediaTests {
    /// A 440 Hz tone (left) and 660 Hz (right), `frames` samples per channel from `start`.
    static func tone(from start: Int, frames: Int) -> [Int16] {
        var samples: [Int16] = []
        samples.reserveCapacity(frames * 2)
        for index in start..<start + frames {
            let t = Double(index) / 48000
            samples.append(Int16(9000 * sin(2 * .pi * 440 * t)))
            samples.append(Int16(9000 * sin(2 * .pi * 660 * t)))
        }
        return samples
    }

    /// A still test picture: a luma gradient with flat chroma.
    static func picture(width: Int = 320, height: Int = 240) -> VideoFrame {
        var frame = VideoFrame.grey(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width { frame.data[y * width + x] = UInt8((x + 2 * y) % 220 + 16) }
        }
        return frame
    }

    final class Collected: @unchecked Sendable {
        let lock = NSLock()
        var audio: [Int16] = []
        var pictures: [VideoFrame] = []
    }

    /// Pushes `seconds` of tone and pictures in real time into the live sources.
    static func feed(_ audio: LiveAudioSource, _ video: LiveVideoSource, seconds: Double) async throws {
        let picture = Self.picture()
        let started = ContinuousClock.now
        var audioFrames = 0
        var pictures = 0
        while ContinuousClock.now - started < .seconds(seconds) {
            let elapsed = (ContinuousClock.now - started).inSeconds
            while Double(audioFrames) / 48000 < elapsed + 0.1 {
                audio.push(Self.tone(from: audioFrames, frames: 960))
                audioFrames += 960
            }
            while Double(pictures) / 15 < elapsed {
                video.push(picture)
                pictures += 1
            }
            try await Task.sleep(for: .milliseconds(10))  // the generator's pace, as an application's
        }
    }

    /// Alice calls Bob with live sources, Bob takes the call into `sink`, and
    /// three seconds of tone and pictures are pushed; the call's id at each end.
    static func liveCall(_ pair: CallClientTests.Pair, into sink: MediaSink, bobEvents: AsyncStream<CallEvent>)
        async throws -> (alice: String, bob: String)
    {
        let aliceEvents = await pair.alice.events()
        let audio = try LiveAudioSource(channels: 2)
        let video = LiveVideoSource(framesPerSecond: 15)
        var media = CallMedia()
        media.liveAudio = audio
        media.liveVideo = video
        let call = try await pair.alice.makeCall(to: "bob", options: [.audio, .video], media: media)
        let incoming = try #require(await CallClientTests.incoming(bobEvents))
        var taking = CallMedia()
        taking.sink = sink
        try await pair.bob.accept(incoming.id, media: taking)
        #expect(await CallClientTests.connected(aliceEvents)?.id == call.id)
        try await Self.feed(audio, video, seconds: 3)
        return (call.id, incoming.id)
    }

    @Test func pushedToneAndPicturesArriveThroughTheSink() async throws {
        let pair = await CallClientTests.Pair()
        let bobEvents = await pair.bob.events()
        let collected = Collected()
        let sink = MediaSink(
            onAudio: { audio, _ in collected.lock.withLock { collected.audio += audio.samples } },
            onVideo: { picture, _ in collected.lock.withLock { collected.pictures.append(picture) } })
        let (call, _) = try await Self.liveCall(pair, into: sink, bobEvents: bobEvents)
        try await pair.alice.endCall(call)
        _ = await CallClientTests.ended(bobEvents)
        #expect(
            await eventually(within: .seconds(5)) {
                sink.delivered > 0 && collected.lock.withLock { !collected.pictures.isEmpty }
            })
        let (samples, pictures) = collected.lock.withLock { (collected.audio, collected.pictures) }
        let heard = AudioFrame(samples: samples, channels: 2, sampleRate: 48000)
        print(
            "live media: \(MediaChecks.seconds(heard)) s of audio, \(pictures.count) pictures, \(sink.dropped) dropped")
        #expect(MediaChecks.seconds(heard) > 2)
        #expect(MediaChecks.tonePower(heard, channel: 0, frequency: 440, skipSeconds: 0.5) > 0.7)
        #expect(MediaChecks.tonePower(heard, channel: 1, frequency: 660, skipSeconds: 0.5) > 0.7)
        #expect(pictures.count >= 30, "\(pictures.count) pictures for 3 s at 15 fps")
        let psnr = pictures.last.flatMap { $0.lumaPsnr(against: Self.picture()) } ?? 0
        #expect(psnr >= 30, "PSNR \(psnr) dB")
        #expect(sink.dropped == 0)
    }

    /// A sink that takes 100 ms per picture cannot keep up with 15 pictures a
    /// second: it drops, while the call goes on receiving everything.
    @Test func aSlowSinkDropsWithoutHoldingTheCallBack() async throws {
        let pair = await CallClientTests.Pair()
        let bobEvents = await pair.bob.events()
        let sink = MediaSink(limit: 5, onVideo: { _, _ in Thread.sleep(forTimeInterval: 0.1) })
        let (call, incoming) = try await Self.liveCall(pair, into: sink, bobEvents: bobEvents)
        let stats = try await pair.bob.mediaStats(incoming).received
        let decoded = stats.first { $0.kind == "video" }?.framesDecoded ?? 0
        let audioPackets = stats.first { $0.kind == "audio" }?.packetsReceived ?? 0
        try await pair.alice.endCall(call)
        print("slow sink: \(decoded) pictures decoded, \(sink.delivered) delivered, \(sink.dropped) dropped")
        #expect(decoded >= 35, "the receiver fell behind: \(decoded) pictures decoded")
        #expect(audioPackets >= 120, "audio packets \(audioPackets)")
        #expect(sink.dropped > 0)
    }
}
