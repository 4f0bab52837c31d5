import Foundation
import RtcCongestion
import RtcRTP

/// Transport-wide congestion control on a peer connection, callable from any
/// thread: outgoing RTP gets a transport-wide sequence number and goes into
/// the send-side estimator (`RtcCongestion`), incoming RTP that carries one is
/// recorded for our feedback, and the peer's feedback and REMB steer the
/// target. Active only when both ends negotiated the transport-wide extension
/// (`a=extmap` with `uri`); otherwise every call here does nothing, so peers
/// that do not speak it (aiortc) see the packets they always saw. A peer
/// that offers only goog-remb (aiortc adapts to nothing else) gets REMBs from
/// our own estimate of its video (`ReceiveSideEstimator`) instead.
///
/// Packets are stamped on the sending thread (a media pacer, or the ICE
/// thread for retransmissions); arrivals and feedback come on the ICE thread.
/// One lock.
final class CongestionControl: @unchecked Sendable {
    /// draft-holmer-rmcat-transport-wide-cc-extensions-01 §2.
    static let uri = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
    /// The id we offer it under (the mid extension takes 1).
    static let offeredId: UInt8 = 3
    /// The `a=rtcp-fb` value that asks for the feedback.
    static let feedbackName = "transport-cc"
    /// How often the receiver reports arrivals.
    static let feedbackInterval: Duration = .milliseconds(100)

    private let lock = NSLock()
    private let started = ContinuousClock.now
    private var estimator: SendSideEstimator
    private var recorder = TransportFeedbackRecorder()
    private var extensionId: UInt8?
    private var feedbacksReceived = 0
    /// Set when the peer takes REMB and not transport-wide feedback.
    private var receiveSide: ReceiveSideEstimator?
    private var rembCount = 0
    private var retransmissions = RetransmissionBudget()
    /// REMBs sent so far.
    var rembsSent: Int { lock.withLock { rembCount } }

    init(_ configuration: SendSideEstimator.Configuration = .init()) {
        estimator = SendSideEstimator(configuration)
    }

    /// µs since this connection began: the estimator's and the recorder's clock.
    private func now() -> Int64 {
        let elapsed = ContinuousClock.now - started
        return elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
    }

    /// The extension id both ends agreed on, or nil: nothing is stamped or
    /// recorded. `remb`: the peer takes REMB (and, with no extension, only that).
    func setNegotiated(extensionId id: UInt8?, remb: Bool = false) {
        lock.withLock {
            extensionId = id
            if id == nil, remb {
                if receiveSide == nil { receiveSide = ReceiveSideEstimator() }
            } else {
                receiveSide = nil
            }
        }
    }

    var isActive: Bool { lock.withLock { extensionId != nil } }

    /// Whether we send the peer REMBs from our own estimate.
    var sendsRemb: Bool { lock.withLock { receiveSide != nil } }

    /// Gives a packet about to leave its transport-wide sequence number (and
    /// counts it in a probe burst when `probeCluster` names one).
    func stamp(_ packet: inout RtpPacket, probeCluster: Int? = nil) {
        lock.withLock {
            guard let id = extensionId else { return }
            let sent = estimator.packetSent(size: Self.linkSize(packet), at: now(), probeCluster: probeCluster)
            let sequence = UInt16(truncatingIfNeeded: sent.sequence)
            packet.extensions.removeAll { $0.id == id }
            packet.extensions.append(.init(id: id, data: [UInt8(sequence >> 8), UInt8(sequence & 0xFF)]))
        }
    }

    /// Whether a packet a NACK asks for may go again now (`RetransmissionBudget`:
    /// within the target each second, once per round trip). Without
    /// transport-wide feedback there is no target or round trip to go by,
    /// and only a packet resent within the last 100 ms is held back.
    func mayRetransmit(_ packet: RtpPacket) -> Bool {
        lock.withLock {
            let snapshot = estimator.snapshot
            let active = extensionId != nil
            return retransmissions.allow(
                ssrc: packet.ssrc, sequence: packet.sequenceNumber, bytes: Self.linkSize(packet), at: now(),
                target: active ? snapshot.target : nil, roundTrip: active && feedbacksReceived > 0 ? snapshot.rtt : nil)
        }
    }

    /// What a packet carries below RTP: the SRTP tag (10), UDP (8) and IPv4
    /// (20), bytes. The estimator reckons in bytes on the link, as libwebrtc's
    /// does (its send-side estimate counts the transport overhead).
    static let transportOverhead = 38
    /// All a packet carries besides its payload: the RTP header (12), the
    /// extension block with the mid and the transport-wide number (12), and
    /// `transportOverhead`. `TargetSplit` takes it out of the encoders' targets.
    static let packetOverhead = 12 + 12 + transportOverhead

    /// Header, the extension block, the payload and the transport below: what
    /// the link carries of a packet, near enough.
    private static func linkSize(_ packet: RtpPacket) -> Int {
        12 + 4 + packet.extensions.reduce(0) { $0 + 1 + $1.data.count } + 3 + packet.payload.count
            + Int(packet.paddingLength) + transportOverhead
    }

    /// A burst of `cluster` starts now and lasts `duration` µs: what is sent
    /// meanwhile counts in it (`SendSideEstimator.probeStarted`).
    func probeStarted(cluster: Int, duration: Int64) {
        lock.withLock { estimator.probeStarted(cluster: cluster, at: now(), duration: duration) }
    }

    /// The probe burst the estimator wants sent now, if any (only while negotiated).
    func nextProbe() -> ProbeCluster? {
        lock.withLock { extensionId == nil ? nil : estimator.nextProbe(at: now()) }
    }

    /// Notes an incoming packet's arrival (`clockRate`: its section's), for
    /// our feedback if it carries the extension, for our REMB estimate. A
    /// packet on an RTX stream counts in the feedback but not in the REMB
    /// estimate: a sender that hears only REMB sets its encoders to it and
    /// retransmits on top, so counting repairs (often repeats of one packet
    /// still queued at the bottleneck) raised the estimate by the overhead and
    /// the encoders overfilled the link (12% dropped through 250 kbit/s, not 0).
    func received(_ packet: RtpPacket, clockRate: UInt32?, retransmission: Bool = false) {
        lock.withLock {
            if receiveSide != nil, let clockRate, !retransmission {
                receiveSide?.received(
                    ssrc: packet.ssrc, sequence: packet.sequenceNumber, timestamp: packet.timestamp,
                    clockRate: Int(clockRate), size: 12 + packet.payload.count, at: now())
            }
            guard let id = extensionId, let data = packet.extensionData(id: id), data.count >= 2 else { return }
            recorder.record(sequence: UInt16(data[0]) << 8 | UInt16(data[1]), at: now())
        }
    }

    /// The feedback due now, from `senderSsrc` about the stream `mediaSsrc`
    /// (any of the peer's): transport-wide feedback, or a REMB when one is due.
    func feedback(senderSsrc: UInt32, mediaSsrc: UInt32) -> [RtcpPacket] {
        lock.withLock {
            if let ssrc = receiveSide?.mediaSsrc, let bitrate = receiveSide?.rembDue(at: now()) {
                rembCount += 1
                return [.remb(senderSsrc: senderSsrc, bitrate: bitrate, ssrcs: [ssrc])]
            }
            guard extensionId != nil else { return [] }
            return recorder.makeFeedback(senderSsrc: senderSsrc, mediaSsrc: mediaSsrc).map { .transportFeedback($0) }
        }
    }

    /// What we tell the peer in REMBs now, bit/s, when we do.
    var receiveSideEstimate: Double? { lock.withLock { receiveSide?.estimate } }

    /// The peer's transport-wide feedback and REMB.
    func handle(_ packets: [RtcpPacket]) {
        lock.withLock {
            for packet in packets {
                switch packet {
                case .transportFeedback(let feedback) where extensionId != nil:
                    estimator.feedback(feedback, at: now())
                    feedbacksReceived += 1
                case .remb(_, let bitrate, _):
                    estimator.receiverEstimate(Double(bitrate))
                default:
                    break
                }
            }
        }
    }

    /// This track's share of the target (`TargetSplit`: audio first, video the
    /// rest less what retransmissions took over the last second), bit/s, and
    /// the loss last reported (0-1); nil when congestion control has nothing
    /// to say (not negotiated, no REMB).
    func share(isAudio: Bool, audioTracks: Int, videoTracks: Int) -> (bitrate: Int, loss: Double)? {
        lock.withLock {
            let snapshot = estimator.snapshot
            guard extensionId != nil || snapshot.receiverCap != nil else { return nil }
            let split = TargetSplit(
                target: snapshot.target, audioTracks: audioTracks, videoTracks: videoTracks,
                repairs: retransmissions.rate(at: now()), packetOverhead: Double(Self.packetOverhead))
            return (Int(isAudio ? split.audioEach : split.videoEach), snapshot.loss)
        }
    }

    /// What the estimator says now; nil when nothing was negotiated and no REMB came.
    var stats: PeerStats.Congestion? {
        lock.withLock {
            let snapshot = estimator.snapshot
            guard extensionId != nil || snapshot.receiverCap != nil else { return nil }
            return PeerStats.Congestion(
                targetBitrate: snapshot.target, acknowledgedBitrate: snapshot.acknowledged,
                roundTripTime: extensionId != nil && feedbacksReceived > 0 ? Double(snapshot.rtt) / 1e6 : nil,
                loss: snapshot.loss, usage: snapshot.usage.rawValue, applicationLimited: snapshot.applicationLimited,
                receiverEstimate: snapshot.receiverCap, feedbacksReceived: feedbacksReceived,
                sentBitrate: snapshot.sent)
        }
    }
}
