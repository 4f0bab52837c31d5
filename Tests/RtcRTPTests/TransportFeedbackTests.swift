import Testing

@testable import RtcRTP

/// Transport-wide feedback and REMB, the two ways a receiver tells a sender what
/// the path carries (draft-holmer-rmcat-transport-wide-cc-extensions-01,
/// draft-alvestrand-rmcat-remb-03), checked against bytes written out by hand.
@Suite struct TransportFeedbackTests {
    /// Base 5, three packets: 1 ms after the reference, lost, then 0.5 ms earlier than the first
    /// (reordered, so a large signed delta); one two-bit status vector, padded with the P bit.
    let golden: [UInt8] = [
        0xAF, 205, 0x00, 0x06,  // V=2, P, FMT 15, RTPFB, 6 words follow
        0, 0, 0, 1, 0, 0, 0, 2,  // sender and media SSRC
        0x00, 0x05, 0x00, 0x03,  // base sequence 5, 3 packets
        0x00, 0x00, 0x01, 0x07,  // reference time 64 ms, feedback 7
        0xD2, 0x00,  // two-bit vector: received small, not received, received large
        0x04, 0xFF, 0xFE,  // +4 ticks, -2 ticks
        0x00, 0x00, 0x03,  // padding
    ]
    let feedback = TransportFeedback(
        senderSsrc: 1, mediaSsrc: 2, baseSequence: 5, referenceTime: 1, feedbackCount: 7,
        arrivals: [1000, nil, 500])

    @Test func goldenFeedbackReadsAndWrites() throws {
        #expect(RtcpPacket.transportFeedback(feedback).serialized() == golden)
        #expect(try RtcpPacket.parseCompound(golden) == [.transportFeedback(feedback)])
        #expect(feedback.referenceMicroseconds == 64_000)
    }

    @Test func runsVectorsAndLongGapsRoundTrip() throws {
        var arrivals: [Int64?] = []
        var time: Int64 = 0
        for index in 0..<500 {
            switch index {
            case 20..<40: arrivals.append(nil)  // a burst of loss: a run of "not received"
            case 100: arrivals.append(nil)
            case 200:
                time += 300_000  // a 300 ms stall: a large delta
                arrivals.append(time)
            default:
                time += Int64(index % 7) * 250
                arrivals.append(time)
            }
        }
        let long = TransportFeedback(
            senderSsrc: 9, mediaSsrc: 0, baseSequence: 65_500, referenceTime: -3, feedbackCount: 255,
            arrivals: arrivals)
        let bytes = RtcpPacket.transportFeedback(long).serialized()
        #expect(bytes.count % 4 == 0)
        #expect(try RtcpPacket.parseCompound(bytes) == [.transportFeedback(long)])
    }

    @Test func arrivalsAreKeptToTheQuarterMillisecondWithoutDrift() throws {
        // 333 µs apart: each delta rounds, but every arrival stays within one tick of the truth.
        let arrivals: [Int64?] = (0..<50).map { Int64($0) * 333 }
        let written = TransportFeedback(
            senderSsrc: 1, mediaSsrc: 2, baseSequence: 0, referenceTime: 0, feedbackCount: 0, arrivals: arrivals)
        guard
            case .transportFeedback(let read) = try RtcpPacket.parseCompound(
                RtcpPacket.transportFeedback(written).serialized()
            ).first
        else {
            Issue.record("not transport feedback")
            return
        }
        for (truth, got) in zip(arrivals, read.arrivals) {
            let difference = (truth ?? 0) - (got ?? -1_000_000)
            #expect(difference >= 0 && difference < 250)
        }
    }

    @Test func feedbackThatLiesIsAnError() {
        var shortDeltas = golden
        shortDeltas[15] = 9  // claims 9 packets: more chunks and deltas than there are bytes
        #expect(throws: RtpError.self) { try RtcpPacket.parseCompound(shortDeltas) }
        var reserved = golden
        reserved[20] = 0xF0  // a two-bit vector whose first symbol is the reserved 11
        #expect(throws: RtpError.self) { try RtcpPacket.parseCompound(reserved) }
        var emptyRun = golden
        (emptyRun[20], emptyRun[21]) = (0x20, 0x00)  // a run of length 0 would never end the statuses
        #expect(throws: RtpError.self) { try RtcpPacket.parseCompound(emptyRun) }
    }

    @Test func goldenRembReadsAndWrites() throws {
        let bytes: [UInt8] = [
            0x8F, 206, 0x00, 0x05, 0, 0, 0, 1, 0, 0, 0, 0, 0x52, 0x45, 0x4D, 0x42,
            0x01, 0x0B, 0xD0, 0x90,  // one SSRC; exponent 2, mantissa 250,000: 1 Mbit/s
            0, 0, 0, 9,
        ]
        let remb = RtcpPacket.remb(senderSsrc: 1, bitrate: 1_000_000, ssrcs: [9])
        #expect(remb.serialized() == bytes)
        #expect(try RtcpPacket.parseCompound(bytes) == [remb])
    }

    @Test func rembKeepsLargeRatesToEighteenSignificantBits() throws {
        let remb = RtcpPacket.remb(senderSsrc: 1, bitrate: 2_500_000_017, ssrcs: [1, 2])
        guard case .remb(_, let bitrate, let ssrcs) = try RtcpPacket.parseCompound(remb.serialized()).first else {
            Issue.record("not REMB")
            return
        }
        #expect(ssrcs == [1, 2])
        #expect(bitrate <= 2_500_000_017 && bitrate > 2_500_000_017 - 2_500_000_017 >> 17)
    }

    @Test func applicationFeedbackThatIsNotRembStaysOther() throws {
        let other = RtcpPacket.other(
            type: 206, count: 15, body: [0, 0, 0, 1, 0, 0, 0, 0, 0x41, 0x42, 0x43, 0x44, 0, 0, 0, 0])
        #expect(try RtcpPacket.parseCompound(other.serialized()) == [other])
    }
}
