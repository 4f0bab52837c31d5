import RtcRTP
import Testing

@Suite struct RtpPacketTests {
    /// V=2 P=1 X=1 CC=1, M=1 PT=96, seq 0x1234, ts 0xDEADBEEF, ssrc 0x01020304, one CSRC,
    /// a one-byte extension (id 1 "a", id 3 "xyz"), payload [AA BB], 3 bytes of padding.
    let golden: [UInt8] = [
        0xB1, 0xE0, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF, 0x01, 0x02, 0x03, 0x04,
        0x0A, 0x0B, 0x0C, 0x0D,
        0xBE, 0xDE, 0x00, 0x02, 0x10, 0x61, 0x32, 0x78, 0x79, 0x7A, 0x00, 0x00,
        0xAA, 0xBB,
        0x00, 0x00, 0x03,
    ]

    @Test func parsesAGoldenPacket() throws {
        let packet = try RtpPacket(parsing: golden)
        #expect(packet.marker && packet.payloadType == 96)
        #expect(packet.sequenceNumber == 0x1234 && packet.timestamp == 0xDEAD_BEEF && packet.ssrc == 0x0102_0304)
        #expect(packet.csrcs == [0x0A0B_0C0D])
        #expect(packet.extensionData(id: 1) == [0x61] && packet.extensionData(id: 3) == [0x78, 0x79, 0x7A])
        #expect(packet.payload == [0xAA, 0xBB] && packet.paddingLength == 3)
        #expect(packet.serialized() == golden)
    }

    @Test func twoByteExtensionsRoundTrip() throws {
        var packet = RtpPacket(payloadType: 111, sequenceNumber: 65535, timestamp: 1, ssrc: 2, payload: [1, 2, 3])
        packet.extensions = [.init(id: 20, data: [UInt8](repeating: 9, count: 20)), .init(id: 2, data: [])]
        let bytes = packet.serialized()
        #expect(bytes[12] == 0x10 && bytes[13] == 0x00)
        #expect(try RtpPacket(parsing: bytes) == packet)
    }

    @Test func malformedPacketsAreErrors() {
        #expect(throws: RtpError.truncated) { try RtpPacket(parsing: Array(golden.prefix(11))) }
        #expect(throws: RtpError.badVersion(1)) { try RtpPacket(parsing: [0x40] + golden.dropFirst()) }
        var badPadding = golden
        badPadding[badPadding.count - 1] = 200
        #expect(throws: RtpError.badPadding) { try RtpPacket(parsing: badPadding) }
        var badExtension = golden
        badExtension[19] = 0x40  // claims 64 words of extension
        #expect(throws: RtpError.truncated) { try RtpPacket(parsing: badExtension) }
        var lyingElement = golden
        lyingElement[22] = 0x3F  // element id 3 claims 16 bytes, past the extension block
        #expect(throws: RtpError.badHeaderExtension) { try RtpPacket(parsing: lyingElement) }
    }
}

@Suite struct RtcpPacketTests {
    let block = RtcpPacket.ReportBlock(
        ssrc: 7, fractionLost: 25, cumulativeLost: -3, extendedHighestSequence: 70_000, jitter: 120,
        lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 65536)

    @Test func compoundReportRoundTrips() throws {
        let packets: [RtcpPacket] = [
            .senderReport(
                .init(
                    ssrc: 1, ntpTime: 0x0102_0304_0506_0708, rtpTime: 9, packetCount: 10, octetCount: 11,
                    reports: [block])),
            .sourceDescription([.init(ssrc: 1, items: [(1, "user@host")])]),
            .receiverReport(.init(ssrc: 2, reports: [block, block])),
            .goodbye(ssrcs: [1, 2], reason: "done"),
            .pli(senderSsrc: 1, mediaSsrc: 2),
            .fir(senderSsrc: 1, entries: [.init(ssrc: 2, sequenceNumber: 5)]),
            .nack(senderSsrc: 1, mediaSsrc: 2, lost: [10, 11, 13, 30]),
            .other(type: 206, count: 15, body: [0x52, 0x45, 0x4D, 0x42]),
        ]
        let compound = packets.flatMap { $0.serialized() }
        #expect(try RtcpPacket.parseCompound(compound) == packets)
        #expect(RtcpPacket.isRtcp(compound))
    }

    @Test func goldenPliAndNackBytes() throws {
        #expect(RtcpPacket.pli(senderSsrc: 1, mediaSsrc: 2).serialized() == [0x81, 206, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2])
        // Lost 10, 11, 13 → PID 10 with bits 0 and 2; 30 → its own pair.
        let nack = RtcpPacket.nack(senderSsrc: 1, mediaSsrc: 2, lost: [10, 11, 13, 30]).serialized()
        #expect(Array(nack.suffix(8)) == [0, 10, 0, 0b101, 0, 30, 0, 0])
        // Wrap-around: 65535 and 0 share one pair.
        let wrapped = RtcpPacket.nack(senderSsrc: 1, mediaSsrc: 2, lost: [65535, 0]).serialized()
        #expect(Array(wrapped.suffix(4)) == [0xFF, 0xFF, 0, 1])
    }

    @Test func malformedCompoundPacketsAreErrors() {
        let sr = RtcpPacket.receiverReport(.init(ssrc: 2, reports: [block])).serialized()
        #expect(throws: RtpError.badLength) { try RtcpPacket.parseCompound(Array(sr.dropLast(4))) }
        #expect(throws: RtpError.truncated) { try RtcpPacket.parseCompound([0x80, 201]) }
        #expect(throws: RtpError.badVersion(0)) { try RtcpPacket.parseCompound([0x00, 201, 0, 0]) }
        var lyingCount = sr
        lyingCount[0] = 0x83  // claims three report blocks
        #expect(throws: RtpError.truncated) { try RtcpPacket.parseCompound(lyingCount) }
    }
}

@Suite struct ReceptionStatisticsTests {
    @Test func countsLossAcrossSequenceWrap() {
        var stats = ReceptionStatistics(ssrc: 5, clockRate: 90000)
        var time = 0.0
        for sequence: UInt16 in [65530, 65531, 65533, 65534, 65535, 0, 1, 3] {
            stats.record(sequence: sequence, timestamp: UInt32(time * 90000), payloadBytes: 100, arrival: time)
            time += 0.01
        }
        #expect(stats.extendedHighestSequence == 65536 + 3)
        #expect(stats.expectedPackets == 10 && stats.packetsReceived == 8 && stats.packetsLost == 2)
        let block = stats.makeReportBlock(now: time)
        #expect(block.cumulativeLost == 2 && block.fractionLost == UInt8((2 << 8) / 10))
        // The next interval has no new loss.
        stats.record(sequence: 4, timestamp: 0, payloadBytes: 1, arrival: time)
        #expect(stats.makeReportBlock(now: time).fractionLost == 0)
    }

    @Test func jitterIsZeroForSteadyArrivalAndGrowsWithVariation() {
        var steady = ReceptionStatistics(ssrc: 1, clockRate: 8000)
        var varied = ReceptionStatistics(ssrc: 1, clockRate: 8000)
        for index in 0..<100 {
            let sent = Double(index) * 0.02
            steady.record(
                sequence: UInt16(index), timestamp: UInt32(sent * 8000), payloadBytes: 10, arrival: sent + 0.05)
            let wobble = index % 2 == 0 ? 0.0 : 0.01
            varied.record(
                sequence: UInt16(index), timestamp: UInt32(sent * 8000), payloadBytes: 10, arrival: sent + 0.05 + wobble
            )
        }
        #expect(steady.jitterSeconds < 0.0005)
        #expect(varied.jitterSeconds > 0.005 && varied.jitterSeconds < 0.011)
    }

    @Test func roundTripTimeFromLsrAndDlsr() {
        var stats = ReceptionStatistics(ssrc: 1, clockRate: 48000)
        let srNtp = NtpTime.from(unixSeconds: 1_000_000)
        stats.noteSenderReport(ntpTime: srNtp, arrival: 50.0)
        stats.record(sequence: 1, timestamp: 1, payloadBytes: 1, arrival: 50.1)
        let block = stats.makeReportBlock(now: 50.25)  // held the SR for 250 ms
        #expect(abs(Double(block.delaySinceLastSenderReport) / 65536 - 0.25) < 0.001)
        // The report arrives back 40 ms of network time after the SR was sent.
        let arrival = NtpTime.from(unixSeconds: 1_000_000 + 0.25 + 0.04)
        let rtt = NtpTime.roundTripSeconds(block: block, arrivalNtp: arrival)
        #expect(rtt.map { abs($0 - 0.04) < 0.001 } == true)
    }
}

@Suite struct RetransmissionAndRoutingTests {
    @Test func cacheAnswersNacksForRecentPacketsOnly() {
        var cache = RetransmissionCache(capacity: 4)
        for sequence: UInt16 in 1...6 {
            cache.store(
                RtpPacket(payloadType: 96, sequenceNumber: sequence, timestamp: 0, ssrc: 9, payload: [UInt8(sequence)]))
        }
        #expect(cache.packets(ssrc: 9, sequences: [6, 5, 1, 2, 3]).map(\.sequenceNumber) == [6, 5, 3])
        #expect(cache.packets(ssrc: 8, sequences: [6]).isEmpty)
    }

    @Test func routesByMidExtensionThenSsrcThenUniquePayloadType() {
        var router = RtpRouter(midExtensionId: 4)
        router.add(ssrc: 100, mid: "0")
        router.add(payloadType: 111, mid: "0")
        router.add(payloadType: 96, mid: "1")
        router.add(payloadType: 97, mid: "1")
        router.add(payloadType: 97, mid: "2")
        var withMid = RtpPacket(payloadType: 97, sequenceNumber: 1, timestamp: 0, ssrc: 555, payload: [])
        withMid.extensions = [.init(id: 4, data: Array("2".utf8))]
        #expect(router.route(withMid) == "2")
        // The SSRC is remembered for later packets without the extension.
        #expect(
            router.route(RtpPacket(payloadType: 97, sequenceNumber: 2, timestamp: 0, ssrc: 555, payload: [])) == "2")
        #expect(router.route(RtpPacket(payloadType: 0, sequenceNumber: 1, timestamp: 0, ssrc: 100, payload: [])) == "0")
        #expect(router.route(RtpPacket(payloadType: 96, sequenceNumber: 1, timestamp: 0, ssrc: 7, payload: [])) == "1")
        #expect(router.route(RtpPacket(payloadType: 97, sequenceNumber: 1, timestamp: 0, ssrc: 8, payload: [])) == nil)
    }
}
