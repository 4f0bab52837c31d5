import RtcRTP
import Testing

/// RFC 4588 §4: the OSN ahead of the original payload, the rest of the header kept.
@Suite struct RtxPacketTests {
    func original() -> RtpPacket {
        var packet = RtpPacket(
            payloadType: 96, sequenceNumber: 0xBEEF, timestamp: 0x0102_0304, ssrc: 0x1111_1111, payload: [1, 2, 3])
        packet.marker = true
        packet.extensions = [.init(id: 1, data: Array("0".utf8))]
        return packet
    }

    @Test func wrappingPutsTheOriginalSequenceNumberFirstOnTheRtxStream() throws {
        let rtx = RtxPacket.wrap(original(), payloadType: 97, ssrc: 0x2222_2222, sequence: 7)
        let bytes = rtx.serialized()
        let parsed = try RtpPacket(parsing: bytes)
        #expect(parsed.payloadType == 97 && parsed.ssrc == 0x2222_2222 && parsed.sequenceNumber == 7)
        #expect(parsed.timestamp == 0x0102_0304 && parsed.marker)
        #expect(parsed.payload == [0xBE, 0xEF, 1, 2, 3])
        #expect(parsed.extensions == original().extensions)
    }

    @Test func unwrappingGivesBackThePacketTheMediaStreamSent() throws {
        let rtx = RtxPacket.wrap(original(), payloadType: 97, ssrc: 0x2222_2222, sequence: 7)
        let parsed = try RtpPacket(parsing: rtx.serialized())
        #expect(RtxPacket.unwrap(parsed, payloadType: 96, ssrc: 0x1111_1111) == original())
    }

    @Test func paddingOnTheRtxStreamHoldsNoPacket() {
        var padding = RtpPacket(payloadType: 97, sequenceNumber: 8, timestamp: 0, ssrc: 0x2222_2222, payload: [])
        padding.paddingLength = 200
        #expect(RtxPacket.unwrap(padding, payloadType: 96, ssrc: 0x1111_1111) == nil)
        let oneByte = RtpPacket(payloadType: 97, sequenceNumber: 9, timestamp: 0, ssrc: 0x2222_2222, payload: [0])
        #expect(RtxPacket.unwrap(oneByte, payloadType: 96, ssrc: 0x1111_1111) == nil)
    }
}
