import AsyncExtras
import Foundation
import RtcCongestion
import RtcRTP

/// Probe bursts (draft-ietf-rmcat-gcc-02 leaves them open; libwebrtc's
/// prober): the estimator asks for a burst at a rate above its target at the
/// start and after a large drop, and the rate the burst arrives at says what
/// the path carries, in a second instead of the tens of seconds that growing
/// 8% a second takes. A burst is padding-only packets (`ProbeBurst`) on the
/// video's RTX stream when RTX is negotiated, else on the video stream, as
/// libwebrtc sends them: each has its stream's next sequence number (a copy of a sent
/// packet would be dropped by the receiver's SRTP replay check before its
/// arrival was recorded), no payload, and a transport-wide number of its own.
/// A call without video does not probe (a few dozen kbit/s of audio needs no
/// ramp), and a call with video only from its second of video on.
extension PeerConnection {
    /// Sends the burst the estimator wants, if one is due, from a thread of
    /// its own (a burst spaces its packets by a millisecond or so, which no
    /// pool thread should sleep through). From the feedback task.
    nonisolated func sendProbeIfDue() {
        // Not before video has flowed for a second: a burst on top of the first
        // keyframe overfilled a 400 kbit/s uplink's queue, where either alone fits.
        guard !transport.isClosed, let since = sending.videoSendingSince, ContinuousClock.now - since >= .seconds(1),
            let cluster = congestion.nextProbe()
        else { return }
        // A padding packet carries a media packet's headers besides its padding.
        let sends = ProbeBurst.schedule(cluster, overhead: CongestionControl.packetOverhead)
        guard !sends.isEmpty else { return }
        let transport = transport
        let congestion = congestion
        let sending = sending
        let thread = Thread {
            let start = ContinuousClock.now
            congestion.probeStarted(cluster: cluster.id, duration: sends.last?.offset ?? 0)
            for send in sends {
                let wait = (start + .microseconds(send.offset) - ContinuousClock.now).inSeconds
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                // No video sent yet: nothing to pad on, the burst is dropped (the estimator goes on without it).
                guard var packet = sending.paddingPacket(padding: send.padding) else { return }
                congestion.stamp(&packet, probeCluster: cluster.id)
                guard transport.sendRtp(packet) else { return }
            }
        }
        thread.name = "probe"
        thread.start()
    }
}
