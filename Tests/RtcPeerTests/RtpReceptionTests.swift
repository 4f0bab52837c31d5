import Foundation
import RtcRTP
import Testing

@testable import RtcPeer

/// The ICE-thread side of incoming RTP, without sockets: routing to sections,
/// statistics, streams attached and finished.
@Suite struct RtpReceptionTests {
    private func packet(pt: UInt8, sequence: UInt16, ssrc: UInt32 = 7) -> RtpPacket {
        RtpPacket(
            payloadType: pt, sequenceNumber: sequence, timestamp: UInt32(sequence) * 960, ssrc: ssrc, payload: [1, 2])
    }

    private func drain(_ stream: AsyncStream<ReceivedRtp>) async -> [ReceivedRtp] {
        var received: [ReceivedRtp] = []
        for await item in stream { received.append(item) }
        return received
    }

    /// RFC 4588: a packet on the peer's RTX stream reaches the section as the
    /// original it carries, counted on the RTX stream; padding there goes no further.
    @Test func retransmissionsArriveAsTheirOriginals() async {
        let reception = RtpReception(started: .now)
        reception.setSections(["1": 90000])
        reception.learn(payloadType: 96, mid: "1")
        reception.learn(payloadType: 97, mid: "1")
        reception.learnRetransmission(payloadType: 97, originalPayloadType: 96)
        reception.learnRetransmission(ssrc: 10, originalSsrc: 9)
        let (video, videoIn) = AsyncStream<ReceivedRtp>.makeStream()
        #expect(reception.attach(mid: "1", videoIn))

        let original = packet(pt: 96, sequence: 5, ssrc: 9)
        let media = reception.deliver(packet(pt: 96, sequence: 6, ssrc: 9))
        let repair = reception.deliver(RtxPacket.wrap(original, payloadType: 97, ssrc: 10, sequence: 100))
        var padding = RtpPacket(payloadType: 97, sequenceNumber: 101, timestamp: 0, ssrc: 10, payload: [])
        padding.paddingLength = 100
        let padded = reception.deliver(padding)
        reception.finishAll()

        #expect(media?.clockRate == 90000 && media?.retransmission == false)
        #expect(repair?.clockRate == 90000 && repair?.retransmission == true)
        #expect(padded?.clockRate == 90000 && padded?.retransmission == true)
        #expect(await drain(video).map(\.packet) == [packet(pt: 96, sequence: 6, ssrc: 9), original])
        #expect(reception.rtxPacketsReceived == 2)
        #expect(reception.inbound.map(\.ssrc) == [9, 10])
    }

    @Test func packetsReachTheirSectionsStreamAndAreCounted() async {
        let reception = RtpReception(started: .now)
        reception.setSections(["0": 48000, "1": 90000])
        reception.learn(payloadType: 111, mid: "0")
        reception.learn(payloadType: 96, mid: "1")
        let (audio, audioIn) = AsyncStream<ReceivedRtp>.makeStream()
        let (video, videoIn) = AsyncStream<ReceivedRtp>.makeStream()
        #expect(reception.attach(mid: "0", audioIn))
        #expect(reception.attach(mid: "1", videoIn))

        reception.deliver(packet(pt: 111, sequence: 10, ssrc: 7))
        reception.deliver(packet(pt: 111, sequence: 12, ssrc: 7))  // 11 lost
        reception.deliver(packet(pt: 96, sequence: 5, ssrc: 9))
        reception.deliver(packet(pt: 100, sequence: 1, ssrc: 11))  // no section for this payload type
        reception.finishAll()

        let audioPackets = await drain(audio)
        let videoPackets = await drain(video)
        #expect(audioPackets.map(\.packet.sequenceNumber) == [10, 12] && audioPackets.allSatisfy { $0.mid == "0" })
        #expect(videoPackets.map(\.packet.sequenceNumber) == [5] && videoPackets.first?.mid == "1")
        let inbound = reception.inbound
        #expect(inbound.map(\.ssrc) == [7, 9])
        #expect(inbound.first?.packetsReceived == 2 && inbound.first?.packetsLost == 1)
        let blocks = reception.reportBlocks(limit: 31)
        #expect(blocks.map(\.ssrc) == [7, 9])
        #expect(reception.reportBlocks(limit: 1).count == 1)
    }

    @Test func aStreamForAnUnknownSectionEndsAtOnceAndARemovedSectionEndsItsStream() async {
        let reception = RtpReception(started: .now)
        reception.setSections(["0": 48000])
        let (unknown, unknownIn) = AsyncStream<ReceivedRtp>.makeStream()
        #expect(!reception.attach(mid: "5", unknownIn))
        #expect(await drain(unknown).isEmpty)

        let (audio, audioIn) = AsyncStream<ReceivedRtp>.makeStream()
        #expect(reception.attach(mid: "0", audioIn))
        reception.setSections([:])  // renegotiated away
        #expect(await drain(audio).isEmpty)
    }

    @Test func aNewStreamForASectionReplacesAndEndsTheOldOne() async {
        let reception = RtpReception(started: .now)
        reception.setSections(["0": 48000])
        reception.learn(payloadType: 111, mid: "0")
        let (first, firstIn) = AsyncStream<ReceivedRtp>.makeStream()
        let (second, secondIn) = AsyncStream<ReceivedRtp>.makeStream()
        #expect(reception.attach(mid: "0", firstIn))
        #expect(reception.attach(mid: "0", secondIn))
        reception.deliver(packet(pt: 111, sequence: 1))
        reception.finishAll()
        #expect(await drain(first).isEmpty)
        #expect(await drain(second).count == 1)
    }
}

/// A handler gets each packet on the delivering thread, as it is delivered.
@Suite struct RtpReceptionHandlerTests {
    final class Collected: @unchecked Sendable {
        let lock = NSLock()
        var sequences: [UInt16] = []
    }

    @Test func aHandlerGetsPacketsUntilItIsRemoved() {
        let reception = RtpReception(started: .now)
        reception.setSections(["0": 48000])
        reception.learn(payloadType: 111, mid: "0")
        let collected = Collected()
        #expect(!reception.setHandler(mid: "9") { _ in })  // no such section
        #expect(
            reception.setHandler(mid: "0") { received in
                collected.lock.withLock { collected.sequences.append(received.packet.sequenceNumber) }
            })
        for sequence: UInt16 in 1...3 {
            reception.deliver(
                RtpPacket(payloadType: 111, sequenceNumber: sequence, timestamp: 0, ssrc: 5, payload: [1]))
        }
        reception.setHandler(mid: "0", nil)
        reception.deliver(RtpPacket(payloadType: 111, sequenceNumber: 4, timestamp: 0, ssrc: 5, payload: [1]))
        #expect(collected.lock.withLock { collected.sequences } == [1, 2, 3])
        #expect(reception.inbound.first?.packetsReceived == 4)  // still counted for reports
    }
}
