import AsyncExtras
import Foundation
import RtcRTP

/// Incoming RTP on the ICE thread: BUNDLE demultiplexing to a media section
/// (RFC 8843 §9.2), reception statistics per SSRC (RFC 3550 §6.4, for
/// receiver reports and stats), and delivery to the section's stream.
///
/// Packets do not pass through the peer connection's actor: a hop there cost
/// every packet one more thread wake-up on its way to the receiver (perf: a
/// fifth of a media recorder's context switches). The actor tells this what
/// negotiation decided; everything here is behind one lock.
final class RtpReception: @unchecked Sendable {
    private struct Section {
        var clockRate: UInt32
        var stream: AsyncStream<ReceivedRtp>.Continuation?
        /// Called with each packet on the delivering thread (a media receiver).
        var handler: (@Sendable (ReceivedRtp) -> Void)?
    }

    private let lock = NSLock()
    private let started: ContinuousClock.Instant
    private var router = RtpRouter()
    private var sections: [String: Section] = [:]
    private var statistics: [UInt32: (mid: String, stats: ReceptionStatistics)] = [:]
    /// The peer's RTX formats (payload type → the original's, `apt`) and
    /// streams (RTX SSRC → the media SSRC it repairs, `a=ssrc-group:FID`).
    private var rtxPayloadTypes: [UInt8: UInt8] = [:]
    private var rtxSsrcs: [UInt32: UInt32] = [:]
    private var rtxReceived: UInt64 = 0

    /// `started`: the zero of the seconds that arrivals and reports are counted in.
    init(started: ContinuousClock.Instant) { self.started = started }

    /// Seconds since `started` (arrival times, report timing).
    func seconds() -> Double { (ContinuousClock.now - started).inSeconds }

    // MARK: What negotiation decided (from the actor)

    /// The media sections that may receive, with their codec's clock rate.
    /// A section's stream survives while the section does.
    func setSections(_ clockRates: [String: UInt32]) {
        lock.withLock {
            for mid in sections.keys where clockRates[mid] == nil {
                sections.removeValue(forKey: mid)?.stream?.finish()
            }
            for (mid, rate) in clockRates { sections[mid, default: Section(clockRate: rate)].clockRate = rate }
        }
    }

    func learn(payloadType: UInt8, mid: String) { lock.withLock { router.add(payloadType: payloadType, mid: mid) } }
    func learn(ssrc: UInt32, mid: String) { lock.withLock { router.add(ssrc: ssrc, mid: mid) } }
    func learnMidExtension(id: UInt8) { lock.withLock { router.midExtensionId = id } }
    func learnRetransmission(payloadType: UInt8, originalPayloadType: UInt8) {
        lock.withLock { rtxPayloadTypes[payloadType] = originalPayloadType }
    }
    func learnRetransmission(ssrc: UInt32, originalSsrc: UInt32) {
        lock.withLock {
            // Bounded by what the peer's descriptions name (sections × 2), yet a peer renegotiating for weeks adds up.
            if rtxSsrcs.count >= 1024 { rtxSsrcs.removeAll() }
            rtxSsrcs[ssrc] = originalSsrc
        }
    }

    /// Sends a section's packets to `stream` from now on; false (and the
    /// stream finished) for a section that does not exist.
    func attach(mid: String, _ stream: AsyncStream<ReceivedRtp>.Continuation) -> Bool {
        let replaced: AsyncStream<ReceivedRtp>.Continuation?? = lock.withLock {
            guard sections[mid] != nil else { return .none }
            defer { sections[mid]?.stream = stream }
            return .some(sections[mid]?.stream)
        }
        guard case .some(let old) = replaced else {
            stream.finish()
            return false
        }
        old?.finish()
        return true
    }

    /// Calls `handler` with each of a section's packets from now on, on the
    /// delivering thread (nil: no more); false for a section that does not exist.
    @discardableResult
    func setHandler(mid: String, _ handler: (@Sendable (ReceivedRtp) -> Void)?) -> Bool {
        lock.withLock {
            guard sections[mid] != nil else { return false }
            sections[mid]?.handler = handler
            return true
        }
    }

    /// Ends every section's stream and drops the handlers (close).
    func finishAll() {
        let streams = lock.withLock {
            defer {
                for mid in sections.keys {
                    sections[mid]?.stream = nil
                    sections[mid]?.handler = nil
                }
            }
            return sections.values.compactMap(\.stream)
        }
        for stream in streams { stream.finish() }
    }

    // MARK: Packets (ICE thread)

    /// Routes, counts and hands on one packet; one with no section is dropped.
    /// A packet on an RTX stream is counted on that stream and handed on as
    /// the original it carries (RFC 4588 §4); padding there goes no further.
    /// Returns its section's clock rate (nil: dropped), and whether it came on an RTX stream.
    @discardableResult
    func deliver(_ packet: RtpPacket) -> (clockRate: UInt32, retransmission: Bool)? {
        let now = seconds()
        let target:
            (
                mid: String, stream: AsyncStream<ReceivedRtp>.Continuation?,
                handler: (@Sendable (ReceivedRtp) -> Void)?, clockRate: UInt32, packet: RtpPacket?,
                retransmission: Bool
            )? = lock.withLock {
                guard let mid = router.route(packet), let section = sections[mid] else { return nil }
                var entry =
                    statistics[packet.ssrc] ?? (
                        mid, ReceptionStatistics(ssrc: packet.ssrc, clockRate: section.clockRate)
                    )
                entry.stats.record(
                    sequence: packet.sequenceNumber, timestamp: packet.timestamp, payloadBytes: packet.payload.count,
                    arrival: now)
                statistics[packet.ssrc] = entry
                guard let originalPayloadType = rtxPayloadTypes[packet.payloadType] else {
                    return (mid, section.stream, section.handler, section.clockRate, packet, false)
                }
                rtxReceived &+= 1
                let original = rtxSsrcs[packet.ssrc].flatMap {
                    RtxPacket.unwrap(packet, payloadType: originalPayloadType, ssrc: $0)
                }
                return (mid, section.stream, section.handler, section.clockRate, original, true)
            }
        guard let target else { return nil }
        guard let packet = target.packet else { return (target.clockRate, target.retransmission) }
        let received = ReceivedRtp(mid: target.mid, packet: packet)
        target.stream?.yield(received)
        target.handler?(received)
        return (target.clockRate, target.retransmission)
    }

    // MARK: Reports and stats (from the actor)

    /// One of the peer's SSRCs, for feedback that names a media source.
    var anyRemoteSsrc: UInt32? { lock.withLock { statistics.keys.min() } }

    /// An RTCP sender report from the peer: its time, for the DLSR of our next report.
    func noteSenderReport(ssrc: UInt32, ntpTime: UInt64) {
        let now = seconds()
        lock.withLock { statistics[ssrc]?.stats.noteSenderReport(ntpTime: ntpTime, arrival: now) }
    }

    /// Report blocks for every stream received (RFC 3550 §6.4.1), at most `limit`.
    func reportBlocks(limit: Int) -> [RtcpPacket.ReportBlock] {
        let now = seconds()
        return lock.withLock {
            var blocks: [RtcpPacket.ReportBlock] = []
            for ssrc in statistics.keys.sorted() where blocks.count < limit {
                if let block = statistics[ssrc]?.stats.makeReportBlock(now: now) { blocks.append(block) }
            }
            return blocks
        }
    }

    /// Packets received on RTX streams (repairs and padding).
    var rtxPacketsReceived: UInt64 { lock.withLock { rtxReceived } }

    var inbound: [PeerStats.InboundStreamStats] {
        lock.withLock {
            statistics.map { ssrc, entry in
                PeerStats.InboundStreamStats(
                    mid: entry.mid, ssrc: ssrc, packetsReceived: entry.stats.packetsReceived,
                    packetsLost: entry.stats.packetsLost, jitter: entry.stats.jitterSeconds)
            }.sorted { $0.ssrc < $1.ssrc }
        }
    }
}
