import RtcRTP
import Testing

@testable import RtcPeer

/// The RTCP report core on its own, on chosen times: what goes out once a
/// second, and what the peer's reports tell.
@Suite struct RtcpReporterTests {
    let start = ContinuousClock.now
    static let ntp = NtpTime.from(unixSeconds: 1_800_000_000.25)

    static func block(ssrc: UInt32, lost: Int32 = 0, lsr: UInt32 = 0, dlsr: UInt32 = 0) -> RtcpPacket.ReportBlock {
        .init(
            ssrc: ssrc, fractionLost: 0, cumulativeLost: lost, extendedHighestSequence: 100, jitter: 0,
            lastSenderReport: lsr, delaySinceLastSenderReport: dlsr)
    }

    /// Each sending stream reports its RTP time moved on to now; the blocks ride on the first.
    @Test func senderReportsCarryTheRtpTimeOfNow() {
        let sent = [
            RtpSending.Sent(
                ssrc: 1, clockRate: 48000, packets: 50, octets: 4000, lastTimestamp: 96_000, lastSent: start),
            RtpSending.Sent(
                ssrc: 2, clockRate: 90000, packets: 30, octets: 60_000, lastTimestamp: UInt32.max - 10,
                lastSent: start + .milliseconds(500)),
        ]
        let blocks = [Self.block(ssrc: 77)]
        let packets = RtcpReporter.reports(
            sent: sent, blocks: blocks, ourSsrc: 1, ntp: Self.ntp, now: start + .seconds(1))
        guard packets.count == 2, case .senderReport(let audio) = packets[0], case .senderReport(let video) = packets[1]
        else {
            Issue.record("two sender reports expected: \(packets)")
            return
        }
        #expect(audio.rtpTime == 96_000 + 48_000 && audio.ntpTime == Self.ntp && audio.reports == blocks)
        #expect(audio.packetCount == 50 && audio.octetCount == 4000)
        #expect(video.rtpTime == (UInt32.max - 10) &+ 45_000 && video.reports.isEmpty)  // wraps
    }

    /// Nothing sent: a receiver report keeps RTCP alive (RFC 3550 §6.4.2), even with no blocks.
    @Test func withNothingSentAReceiverReportGoes() {
        let packets = RtcpReporter.reports(sent: [], blocks: [], ourSsrc: 9, ntp: Self.ntp, now: start)
        #expect(packets == [.receiverReport(.init(ssrc: 9, reports: []))])
        #expect(RtcpReporter.reports(sent: [], blocks: [], ourSsrc: nil, ntp: Self.ntp, now: start).isEmpty)
    }

    /// The peer's blocks on our streams give the round trip (LSR/DLSR) and its loss; others are ignored.
    @Test func reportsOnOurStreamsGiveRoundTripAndLoss() {
        var reporter = RtcpReporter()
        let arrival = NtpTime.from(unixSeconds: 1_800_000_010)
        let middle = UInt32(truncatingIfNeeded: arrival >> 16)
        // Our report was stamped 0.3 s before arrival and the peer held it 0.1 s: 0.2 s round trip.
        let block = Self.block(ssrc: 5, lost: 7, lsr: middle &- 19_661, dlsr: 6554)
        let stranger = Self.block(ssrc: 6, lost: 99, lsr: middle &- 65_536, dlsr: 0)
        let heard = reporter.received(
            [.receiverReport(.init(ssrc: 100, reports: [stranger, block]))], ours: [5], arrivalNtp: arrival)
        #expect(heard == RtcpReporter.Heard())
        #expect(reporter.lostByPeer == 7)
        #expect(abs((reporter.roundTripTime ?? 0) - 0.2) < 0.001)
    }

    /// The peer's sender reports give its clocks; PLI and FIR for our streams ask for keyframes.
    @Test func senderReportsAndKeyframeRequests() {
        var reporter = RtcpReporter()
        let report = RtcpPacket.SenderReport(
            ssrc: 300, ntpTime: Self.ntp, rtpTime: 1234, packetCount: 1, octetCount: 1, reports: [])
        let heard = reporter.received(
            [
                .senderReport(report), .pli(senderSsrc: 300, mediaSsrc: 5), .pli(senderSsrc: 300, mediaSsrc: 6),
                .fir(senderSsrc: 300, entries: [.init(ssrc: 5, sequenceNumber: 1), .init(ssrc: 8, sequenceNumber: 1)]),
            ], ours: [5], arrivalNtp: Self.ntp)
        #expect(heard.keyframeRequests == [5, 5])
        #expect(heard.senderReports.map(\.ssrc) == [300] && heard.senderReports.first?.ntpTime == Self.ntp)
        #expect(reporter.senderClocks[300] == SenderClock(wallclock: 1_800_000_000.25, rtpTimestamp: 1234))
        #expect(reporter.roundTripTime == nil)
    }
}
