import RtcCodecs
import RtcRTP
import Testing

@testable import RtcMedia

/// The video receive path on virtual time: real VP8 frames in packets go in;
/// pictures, NACKs and keyframe requests come out.
@Suite struct VideoReceivePipelineTests {
    /// A stream of `count` frames as RTP packets of at most 300 bytes
    /// (a keyframe first), sequence numbers running on across frames.
    struct Stream {
        var frames: [[RtpPacket]] = []

        init(count: Int, keyframeAt: Set<Int> = [0]) throws {
            let encoder = try Vp8VideoEncoder(.init(width: 160, height: 120, bitrate: 300_000))
            var sequence: UInt16 = 65530  // across the wrap
            for index in 0..<count {
                var picture = VideoFrame.grey(width: 160, height: 120)
                for pixel in 0..<160 * 120 { picture.data[pixel] = UInt8(truncatingIfNeeded: pixel &* 7 &+ index * 13) }
                let encoded = try encoder.encode(picture, keyframe: keyframeAt.contains(index))
                var packets: [RtpPacket] = []
                for frame in encoded {
                    let payloads = Vp8Payload.packetize(frame.data, pictureId: UInt16(index), maxPayloadSize: 300)
                    for (part, payload) in payloads.enumerated() {
                        var packet = RtpPacket(
                            payloadType: 96, sequenceNumber: sequence, timestamp: UInt32(index * 3000), ssrc: 4,
                            payload: payload)
                        packet.marker = part == payloads.count - 1
                        packets.append(packet)
                        sequence &+= 1
                    }
                }
                frames.append(packets)
            }
        }
    }

    static func pipeline() throws -> VideoReceivePipeline {
        VideoReceivePipeline(mid: "1", decoder: try Vp8VideoDecoder())
    }

    static func pictures(_ media: [ReceivedMedia]) -> [UInt32] {
        media.compactMap { item in
            if case .picture(_, let timestamp) = item { return timestamp }
            return nil
        }
    }

    static func feedback(_ media: [ReceivedMedia]) -> [(nacks: [UInt16], keyframe: Bool)] {
        media.compactMap { item in
            if case .feedback(let ssrc, let nacks, let keyframe) = item, ssrc == 4 { return (nacks, keyframe) }
            return nil
        }
    }

    @Test func aWholeStreamDecodesInOrderWithoutFeedback() throws {
        let stream = try Stream(count: 10)
        var pipeline = try Self.pipeline()
        var media: [ReceivedMedia] = []
        for (index, frame) in stream.frames.enumerated() {
            for packet in frame { media += pipeline.receive(packet, now: Double(index) / 30) }
        }
        #expect(Self.pictures(media) == (0..<10).map { UInt32($0 * 3000) })
        #expect(Self.feedback(media).isEmpty)
        let stats = pipeline.stats
        #expect(stats.framesDecoded == 10 && stats.keyframesReceived == 1 && stats.decodeErrors == 0)
        #expect(stats.width == 160 && stats.height == 120 && stats.freezes == 0)
        #expect(abs(stats.seconds - 0.3) < 1e-9)
    }

    @Test func aMissingPacketIsAskedForAndARetransmissionCompletesTheFrame() throws {
        let stream = try Stream(count: 3)
        let lost = stream.frames[1][0]
        var pipeline = try Self.pipeline()
        var media: [ReceivedMedia] = []
        for packet in stream.frames[0] { media += pipeline.receive(packet, now: 0) }
        for packet in stream.frames[1].dropFirst() + stream.frames[2] { media += pipeline.receive(packet, now: 0.033) }
        #expect(Self.feedback(media).map(\.nacks) == [[lost.sequenceNumber]])  // asked at once
        media += pipeline.advance(now: 0.05)  // not again before the NACK interval
        #expect(Self.feedback(media).count == 1)
        media += pipeline.receive(lost, now: 0.06)
        #expect(Self.pictures(media) == [0, 3000, 6000])
        #expect(pipeline.stats.nacksSent == 1 && pipeline.stats.plisSent == 0 && pipeline.stats.packetsLost == 0)
    }

    @Test func aLostFrameAsksForAKeyframeAndTheNextRequestWaitsAtLeastThreeTenthsOfASecond() throws {
        let stream = try Stream(count: 12)
        var pipeline = try Self.pipeline()
        var media: [ReceivedMedia] = []
        var requests: [Double] = []
        var delivered = 0
        // Frames 1 and 5 lose their first packet for good; time runs in 10 ms steps.
        for step in 0...100 {
            let now = Double(step) / 100
            while delivered < stream.frames.count, Double(delivered) / 30 <= now {
                let frame = stream.frames[delivered]
                for packet in [1, 5].contains(delivered) ? Array(frame.dropFirst()) : frame {
                    let out = pipeline.receive(packet, now: now)
                    requests += Self.feedback(out).filter(\.keyframe).map { _ in now }
                    media += out
                }
                delivered += 1
            }
            let out = pipeline.advance(now: now)
            requests += Self.feedback(out).filter(\.keyframe).map { _ in now }
            media += out
        }
        // The first gap is given up about 0.17 s after it (three NACKs' time,
        // each 40 ms beyond the 10 ms of delay variation the 10 ms steps make),
        // and a keyframe asked for at once; no sender answers, and the frames
        // after it ask again, but only 0.3 s later.
        #expect(requests.count == 2, "\(requests)")
        if requests.count == 2 {
            #expect(requests[0] <= 0.21)
            #expect(requests[1] - requests[0] >= 0.3 && requests[1] - requests[0] < 0.32)
        }
        #expect(pipeline.stats.plisSent == 2)
        #expect(Self.pictures(media) == [0])
        #expect(!pipeline.isWaiting)
    }

    /// A keyframe behind a gap (the answer to a PLI, or the sender's own) is
    /// decoded as it comes: the frames before it no longer matter, so it does
    /// not wait out their gap, and it answers the request the gap made.
    @Test func aKeyframeBehindAGapDecodesAtOnce() throws {
        let stream = try Stream(count: 6, keyframeAt: [0, 3])
        var pipeline = try Self.pipeline()
        var decodedAt: [UInt32: Double] = [:]
        var feedback: [(nacks: [UInt16], keyframe: Bool)] = []
        for (index, frame) in stream.frames.enumerated() {
            let now = Double(index) / 30
            for packet in index == 1 ? Array(frame.dropFirst()) : frame {  // frame 1's first packet never comes
                let out = pipeline.receive(packet, now: now)
                feedback += Self.feedback(out)
                for timestamp in Self.pictures(out) { decodedAt[timestamp] = now }
            }
        }
        let out = pipeline.advance(now: 1)
        feedback += Self.feedback(out)
        #expect(Set(decodedAt.keys) == [0, 9000, 12000, 15000])  // frames 1 and 2 are lost
        #expect(decodedAt[9000] == 0.1)  // at its arrival, not after the gap's wait
        #expect(!feedback.contains { $0.keyframe })
        #expect(pipeline.stats.plisSent == 0 && pipeline.stats.packetsLost == 1)
        #expect(!pipeline.isWaiting)
    }

    /// A sender's probe burst: padding-only packets between frames, numbered in
    /// the stream's sequence. They keep the sequence whole and belong to no frame.
    @Test func paddingBetweenFramesIsSkippedWithoutFeedback() throws {
        let stream = try Stream(count: 6)
        var pipeline = try Self.pipeline()
        var media: [ReceivedMedia] = []
        var shift: UInt16 = 0
        for (index, frame) in stream.frames.enumerated() {
            let now = Double(index) / 30
            for var packet in frame {
                packet.sequenceNumber &+= shift
                media += pipeline.receive(packet, now: now)
            }
            guard index == 2, let last = frame.last else { continue }
            // Three padding packets after frame 2, at its timestamp.
            for extra in 1...3 {
                var padding = RtpPacket(
                    payloadType: 96, sequenceNumber: last.sequenceNumber &+ shift &+ UInt16(extra),
                    timestamp: last.timestamp, ssrc: 4, payload: [])
                padding.paddingLength = 200
                media += pipeline.receive(padding, now: now + 0.005)
            }
            shift = 3
        }
        #expect(Self.pictures(media) == (0..<6).map { UInt32($0 * 3000) })
        #expect(Self.feedback(media).isEmpty)
        #expect(pipeline.stats.framesDropped == 0)
    }

    @Test func aLongPauseBetweenDecodedFramesIsAFreeze() throws {
        let stream = try Stream(count: 12)
        var pipeline = try Self.pipeline()
        for (index, frame) in stream.frames.enumerated() {
            let now = Double(index) / 30 + (index >= 8 ? 0.5 : 0)  // half a second stalled before the 9th
            for packet in frame { _ = pipeline.receive(packet, now: now) }
        }
        #expect(pipeline.stats.freezes == 1 && pipeline.stats.framesDecoded == 12)
        let gap = try #require(pipeline.stats.longestFrameGap)
        #expect(abs(gap - (0.5 + 1.0 / 30)) < 0.001, "longest gap \(gap) s")
    }

    @Test func flushGivesUpGapsAndEndsWithoutFeedback() throws {
        let stream = try Stream(count: 2)
        var pipeline = try Self.pipeline()
        var keyframe = stream.frames[0]
        #expect(keyframe.count > 2)
        keyframe.remove(at: 1)
        for packet in keyframe + stream.frames[1] { _ = pipeline.receive(packet, now: 0) }
        #expect(pipeline.isWaiting)
        let flushed = pipeline.flush()
        #expect(Self.feedback(flushed).isEmpty && Self.pictures(flushed).isEmpty)
        // Dropped: the broken keyframe and the frame after it.
        #expect(pipeline.stats.packetsLost == 1 && pipeline.stats.framesDropped >= 2)
    }
}
