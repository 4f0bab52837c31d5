import RtcRTP

/// RTCP reports of one peer connection, both ways (pure: what was sent and
/// received, and the times, go in; packets and facts come out;
/// `PeerConnection` sends them once a second and passes on what it learns).
///
/// - Out (RFC 3550 §6.4): a sender report per stream that sent something,
///   the first carrying the reception report blocks; with nothing sent, a
///   receiver report (empty if nothing came either) so RTCP keeps flowing and
///   the peer knows we are alive (§6.4.2).
/// - In: the peer's sender reports give each incoming stream's clock (for
///   lip sync and latency); report blocks about our streams give the round-trip
///   time (§6.4.1, LSR/DLSR) and the loss the peer saw; PLI and FIR ask for a
///   keyframe. NACKs are answered on the ICE thread, not here.
struct RtcpReporter {
    /// What the peer's RTCP said that the connection acts on.
    struct Heard: Equatable {
        /// Incoming streams' sender reports (SSRC and NTP time), for the reception statistics.
        var senderReports: [(ssrc: UInt32, ntpTime: UInt64)] = []
        /// Our streams the peer wants a keyframe for.
        var keyframeRequests: [UInt32] = []

        static func == (a: Heard, b: Heard) -> Bool {
            a.keyframeRequests == b.keyframeRequests
                && a.senderReports.map(\.ssrc) == b.senderReports.map(\.ssrc)
                && a.senderReports.map(\.ntpTime) == b.senderReports.map(\.ntpTime)
        }
    }

    /// From the peer's reports on our streams (RFC 3550 §6.4.1), seconds.
    private(set) var roundTripTime: Double?
    /// The cumulative loss the peer last reported on our streams.
    private(set) var lostByPeer: Int64 = 0
    /// Per incoming SSRC, the last sender report's wallclock and RTP time.
    private(set) var senderClocks: [UInt32: SenderClock] = [:]

    /// The reports to send now. `sent`: our streams that sent something;
    /// `blocks`: reception report blocks; `ourSsrc`: the SSRC to report from
    /// when nothing was sent; `ntp`: the wallclock now (NTP format) and `now`
    /// the same instant on the monotonic clock.
    static func reports(
        sent: [RtpSending.Sent], blocks: [RtcpPacket.ReportBlock], ourSsrc: UInt32?, ntp: UInt64,
        now: ContinuousClock.Instant
    ) -> [RtcpPacket] {
        var packets: [RtcpPacket] = []
        for stream in sent {
            // The RTP time that corresponds to `ntp`: the last timestamp sent, moved on by the time since.
            let seconds = (now - stream.lastSent).inSeconds
            let rtpNow = stream.lastTimestamp &+ UInt32(truncatingIfNeeded: Int64(seconds * Double(stream.clockRate)))
            packets.append(
                .senderReport(
                    .init(
                        ssrc: stream.ssrc, ntpTime: ntp, rtpTime: rtpNow, packetCount: stream.packets,
                        octetCount: stream.octets, reports: packets.isEmpty ? blocks : [])))
        }
        if packets.isEmpty, let ourSsrc {
            packets.append(.receiverReport(.init(ssrc: ourSsrc, reports: blocks)))
        }
        return packets
    }

    /// A compound packet from the peer, which arrived at `arrivalNtp`;
    /// `ours`: the SSRCs we send on.
    mutating func received(_ packets: [RtcpPacket], ours: Set<UInt32>, arrivalNtp: UInt64) -> Heard {
        var heard = Heard()
        for packet in packets {
            switch packet {
            case .senderReport(let report):
                heard.senderReports.append((report.ssrc, report.ntpTime))
                senderClocks[report.ssrc] = SenderClock(
                    wallclock: NtpTime.unixSeconds(report.ntpTime), rtpTimestamp: report.rtpTime)
                note(report.reports, ours: ours, arrivalNtp: arrivalNtp)
            case .receiverReport(let report):
                note(report.reports, ours: ours, arrivalNtp: arrivalNtp)
            case .pli(_, let mediaSsrc) where ours.contains(mediaSsrc):
                heard.keyframeRequests.append(mediaSsrc)
            case .fir(_, let entries):
                heard.keyframeRequests += entries.map(\.ssrc).filter(ours.contains)
            default:
                break
            }
        }
        return heard
    }

    private mutating func note(_ blocks: [RtcpPacket.ReportBlock], ours: Set<UInt32>, arrivalNtp: UInt64) {
        for block in blocks where ours.contains(block.ssrc) {
            if let rtt = NtpTime.roundTripSeconds(block: block, arrivalNtp: arrivalNtp) { roundTripTime = rtt }
            lostByPeer = Int64(block.cumulativeLost)
        }
    }
}
