import Foundation
import RtcCodecs
import RtcRTP
import Testing

@testable import RtcMedia

/// The audio receive path on virtual time: real Opus packets in, samples,
/// recordable packets and no feedback out.
@Suite struct AudioReceivePipelineTests {
    /// Twenty-millisecond Opus packets of a tone, RTP timestamps 960 apart.
    static func packets(_ count: Int) throws -> [RtpPacket] {
        let encoder = try OpusAudioEncoder()
        return try (0..<count).map { index in
            let samples = (0..<OpusAudioEncoder.frameSamples * 2).map { sample in
                Int16(8000 * sin(Double(index * OpusAudioEncoder.frameSamples + sample / 2) * 0.06))
            }
            return RtpPacket(
                payloadType: 111, sequenceNumber: UInt16(100 + index), timestamp: UInt32(5000 + index * 960),
                ssrc: 9, payload: try encoder.encode(samples))
        }
    }

    static func pipeline(decoding: Bool = true) throws -> AudioReceivePipeline {
        AudioReceivePipeline(mid: "0", decoder: decoding ? try OpusAudioDecoder(channels: 2) : nil)
    }

    static func samples(_ media: [ReceivedMedia]) -> Int {
        media.reduce(0) { total, item in
            if case .pcm(let pcm) = item { return total + pcm.count / 2 }
            return total
        }
    }

    static func opusTimestamps(_ media: [ReceivedMedia]) -> [UInt32] {
        media.compactMap { item in
            if case .opus(_, let timestamp) = item { return timestamp }
            return nil
        }
    }

    @Test func aLostPacketIsConcealedAndTheStreamStaysWhole() throws {
        let packets = try Self.packets(6)
        var pipeline = try Self.pipeline()
        var media: [ReceivedMedia] = []
        for (index, packet) in packets.enumerated() where index != 2 {
            media += pipeline.receive(packet, now: Double(index) * 0.02)
        }
        media += pipeline.advance(now: 1)
        guard case .audioStarts(let first) = media.first else {
            Issue.record("the stream does not start with audioStarts: \(media.first.map { "\($0)" } ?? "nothing")")
            return
        }
        #expect(first == 5000)
        #expect(Self.opusTimestamps(media) == [5000, 5960, 7880, 8840, 9800])
        #expect(Self.samples(media) == 6 * 960)  // five decoded and one concealed: no hole, no overlap
        let stats = pipeline.stats
        #expect(stats.packetsReceived == 5 && stats.framesReceived == 5 && stats.framesDecoded == 5)
        #expect(stats.concealedFrames == 1 && stats.packetsLost == 1)
        #expect(abs(stats.seconds - 0.12) < 1e-9)
        #expect(!media.contains { if case .feedback = $0 { true } else { false } })  // audio never asks again
    }

    @Test func aLatePacketAfterItsGapWasFilledIsNotPlayedTwice() throws {
        let packets = try Self.packets(4)
        var pipeline = try Self.pipeline()
        var media = pipeline.receive(packets[0], now: 0) + pipeline.receive(packets[2], now: 0.04)
        media += pipeline.advance(now: 1)  // the gap given up and concealed
        media += pipeline.receive(packets[1], now: 1.01)  // too late
        media += pipeline.receive(packets[3], now: 1.02)
        #expect(Self.opusTimestamps(media) == [5000, 6920, 7880])
        #expect(Self.samples(media) == 4 * 960)
        #expect(pipeline.stats.lateOrDuplicate == 1)
    }

    @Test func withoutADecoderPacketsPassAndTimeIsCounted() throws {
        let packets = try Self.packets(3)
        var pipeline = try Self.pipeline(decoding: false)
        var media: [ReceivedMedia] = []
        for (index, packet) in packets.enumerated() { media += pipeline.receive(packet, now: Double(index) * 0.02) }
        #expect(Self.opusTimestamps(media) == [5000, 5960, 6920])
        #expect(Self.samples(media) == 0)
        #expect(pipeline.stats.framesDecoded == 0 && abs(pipeline.stats.seconds - 0.06) < 1e-9)
    }

    @Test func aPacketThatIsNotOpusIsSkipped() throws {
        var pipeline = try Self.pipeline()
        let empty = RtpPacket(payloadType: 111, sequenceNumber: 1, timestamp: 0, ssrc: 9, payload: [])
        #expect(pipeline.receive(empty, now: 0).isEmpty)
        #expect(pipeline.stats.packetsReceived == 1 && pipeline.stats.framesReceived == 0)
    }
}
