import RtcCodecs
import RtcMedia
import RtcRTP
import Testing

/// The jitter buffer and the VP8 frame assembler, driven with chosen packets and times.
@Suite struct JitterBufferTests {
    static func packet(_ sequence: UInt16, timestamp: UInt32 = 0, marker: Bool = false, payload: [UInt8] = [0])
        -> RtpPacket
    {
        var packet = RtpPacket(
            payloadType: 96, sequenceNumber: sequence, timestamp: timestamp, ssrc: 7, payload: payload)
        packet.marker = marker
        return packet
    }

    static func sequences(_ outputs: [JitterBuffer.Output]) -> [String] {
        outputs.map {
            switch $0 {
            case .packet(let packet): "\(packet.sequenceNumber)"
            case .lost(let count): "lost \(count)"
            }
        }
    }

    @Test func reordersAcrossTheSequenceWrap() {
        var buffer = JitterBuffer()
        buffer.insert(Self.packet(65534), arrival: 0)
        #expect(Self.sequences(buffer.pop(now: 0)) == ["65534"])
        buffer.insert(Self.packet(0), arrival: 0.01)
        buffer.insert(Self.packet(65535), arrival: 0.02)
        buffer.insert(Self.packet(1), arrival: 0.03)
        #expect(Self.sequences(buffer.pop(now: 0.03)) == ["65535", "0", "1"])
        buffer.insert(Self.packet(1), arrival: 0.04)  // duplicate
        buffer.insert(Self.packet(65535), arrival: 0.05)  // already played
        #expect(buffer.pop(now: 0.05).isEmpty)
        #expect(buffer.duplicates + buffer.late == 2)
    }

    @Test func aGapIsNackedThenGivenUpAfterTheWait() {
        var buffer = JitterBuffer()
        buffer.insert(Self.packet(10), arrival: 0)
        buffer.insert(Self.packet(13), arrival: 0.01)
        #expect(Self.sequences(buffer.pop(now: 0.01)) == ["10"])
        #expect(buffer.nacks(now: 0.02) == [11, 12])
        #expect(buffer.nacks(now: 0.03).isEmpty)  // not again before the interval
        buffer.insert(Self.packet(11), arrival: 0.04)  // the retransmission
        #expect(Self.sequences(buffer.pop(now: 0.04)) == ["11"])
        #expect(buffer.nacks(now: 0.07) == [12])
        #expect(buffer.pop(now: 0.1).isEmpty)  // still waiting for 12
        #expect(Self.sequences(buffer.pop(now: 0.25)) == ["lost 1", "13"])
        #expect(buffer.lost == 1)
        buffer.insert(Self.packet(12), arrival: 0.3)  // too late now
        #expect(buffer.late == 1 && buffer.pop(now: 0.3).isEmpty)
    }

    /// Skipping to a keyframe's first packet gives up the gaps before it and
    /// the packets held between them; without a gap before it, nothing changes.
    @Test func gapsBeforeAKeyframeAreGivenUpAtOnce() {
        var buffer = JitterBuffer()
        buffer.insert(Self.packet(1), arrival: 0)
        #expect(Self.sequences(buffer.pop(now: 0)) == ["1"])
        #expect(buffer.skipGaps(before: 2).isEmpty)  // not held
        for sequence: UInt16 in [3, 5, 6] { buffer.insert(Self.packet(sequence), arrival: 0.01) }
        #expect(buffer.pop(now: 0.01).isEmpty)  // 2 and 4 are missing
        #expect(buffer.skipGaps(before: 5) == [.lost(count: 3)])
        #expect(Self.sequences(buffer.pop(now: 0.01)) == ["5", "6"])
        #expect(buffer.lost == 2)
        #expect(buffer.nacks(now: 0.1).isEmpty)  // 2 and 4 are not asked for any more
        buffer.insert(Self.packet(7), arrival: 0.02)
        _ = buffer.pop(now: 0.02)
        #expect(buffer.skipGaps(before: 7).isEmpty)  // nothing held it back
    }

    @Test func nacksStopAfterTheLimit() {
        var buffer = JitterBuffer()
        buffer.insert(Self.packet(1), arrival: 0)
        buffer.insert(Self.packet(3), arrival: 0)
        _ = buffer.pop(now: 0)
        var asked = 0
        for step in 0..<10 { asked += buffer.nacks(now: Double(step) * 0.05).count }
        #expect(asked == 3)
    }

    @Test func framesAssembleAndLossWaitsForAKeyframe() {
        var assembler = Vp8FrameAssembler()
        let key = Vp8Payload.packetize(
            [0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9] + [UInt8](repeating: 7, count: 2000), pictureId: 1)
        let delta = Vp8Payload.packetize([0x11, 9, 9], pictureId: 2)
        var sequence: UInt16 = 100
        func feed(_ payloads: [[UInt8]], timestamp: UInt32) -> [Vp8FrameAssembler.Output] {
            payloads.enumerated().flatMap { index, payload -> [Vp8FrameAssembler.Output] in
                defer { sequence &+= 1 }
                return assembler.push(
                    .packet(
                        Self.packet(
                            sequence, timestamp: timestamp, marker: index == payloads.count - 1, payload: payload)))
            }
        }
        // A delta frame before any keyframe cannot be decoded.
        #expect(feed(delta, timestamp: 0) == [.needKeyframe])
        let frames = feed(key, timestamp: 3000)
        #expect(frames.count == 1)
        if case .frame(let data, let timestamp, let isKeyframe) = frames[0] {
            #expect(data.count == 2010 && timestamp == 3000 && isKeyframe)
        }
        #expect(feed(delta, timestamp: 6000).count == 1)
        // A loss: a keyframe is asked for, and delta frames wait for it.
        #expect(assembler.push(.lost(count: 1)) == [.needKeyframe])
        #expect(feed(delta, timestamp: 9000) == [.needKeyframe])
        #expect(feed(key, timestamp: 12000).count == 1)
        #expect(assembler.framesDropped == 2)
    }
}
