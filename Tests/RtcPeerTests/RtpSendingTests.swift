import RtcRTP
import Testing

@testable import RtcPeer

/// Outgoing RTP state without sockets: numbering, markers, counters for
/// sender reports, NACK answers, and what negotiation changes.
@Suite struct RtpSendingTests {
    private func section(_ mid: String, ssrc: UInt32, sends: Bool = true, pt: UInt8? = 96) -> RtpSending.Section {
        RtpSending.Section(mid: mid, ssrc: ssrc, payloadType: pt, clockRate: 90000, sends: sends, midExtensionId: 3)
    }

    @Test func aFramesPacketsAreNumberedInOrderWithTheMarkerOnTheLast() throws {
        let sending = RtpSending()
        sending.setSections([section("1", ssrc: 42)])
        let first = try sending.packets(mid: "1", payloads: [[1], [2, 2], [3, 3, 3]], timestamp: 9000, marker: true)
        #expect(first.first)
        let sequences = first.packets.map(\.sequenceNumber)
        #expect(sequences == [sequences[0], sequences[0] &+ 1, sequences[0] &+ 2])
        #expect(first.packets.map(\.marker) == [false, false, true])
        #expect(first.packets.allSatisfy { $0.ssrc == 42 && $0.payloadType == 96 && $0.timestamp == 9000 })
        #expect(first.packets.allSatisfy { $0.extensionData(id: 3) == Array("1".utf8) })

        let second = try sending.packets(mid: "1", payloads: [[4]], timestamp: 12000, marker: false)
        #expect(!second.first && second.packets.first?.sequenceNumber == sequences[0] &+ 3)
        #expect(second.packets.first?.marker == false)
        #expect(
            sending.sent == [
                .init(
                    ssrc: 42, clockRate: 90000, packets: 4, octets: 7, lastTimestamp: 12000,
                    lastSent: try #require(sending.sent.first?.lastSent))
            ])
    }

    @Test func aSectionThatIsMissingOrDoesNotSendIsRefused() {
        let sending = RtpSending()
        sending.setSections([section("0", ssrc: 1, sends: false), section("1", ssrc: 2, pt: nil)])
        #expect(throws: RtpSending.Refusal.noSection("7")) {
            try sending.packets(mid: "7", payloads: [[1]], timestamp: 0, marker: false)
        }
        #expect(throws: RtpSending.Refusal.doesNotSend("0")) {
            try sending.packets(mid: "0", payloads: [[1]], timestamp: 0, marker: false)
        }
        #expect(throws: RtpSending.Refusal.doesNotSend("1")) {
            try sending.packets(mid: "1", payloads: [[1]], timestamp: 0, marker: false)
        }
        #expect(sending.sent.isEmpty)
    }

    @Test func nacksGetTheKeptPacketsAndNegotiationKeepsCountersBySsrc() throws {
        let sending = RtpSending()
        sending.setSections([section("0", ssrc: 5)])
        let sent = try sending.packets(mid: "0", payloads: [[1], [2]], timestamp: 100, marker: false).packets
        let asked = [sent[1].sequenceNumber, sent[0].sequenceNumber &- 1]
        #expect(sending.retransmissions(ssrc: 5, sequences: asked) == [sent[1]])

        // The section takes the peer's mid: its stream goes on.
        sending.setSections([section("audio", ssrc: 5)])
        let next = try sending.packets(mid: "audio", payloads: [[3]], timestamp: 200, marker: false)
        #expect(!next.first && next.packets.first?.sequenceNumber == sent[1].sequenceNumber &+ 1)
        #expect(sending.sent.first?.packets == 3)

        // Renegotiated away: its packets and counters go.
        sending.setSections([])
        #expect(sending.retransmissions(ssrc: 5, sequences: asked).isEmpty && sending.sent.isEmpty)
    }
}
