import AsyncExtras
import Foundation
import RtcCongestion
import RtcRTP
import RtcSDP

/// RTP and RTCP of the media sections, and transport-wide congestion
/// control: sends and receives go straight to the ICE thread, reports and
/// feedback on timers.
extension PeerConnection {
    // MARK: RTP and RTCP

    /// RTP packets received on a media section, in arrival order.
    public func receivedRtp(mid: String) -> AsyncStream<ReceivedRtp> {
        let (stream, continuation) = AsyncStream<ReceivedRtp>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        _ = reception.attach(mid: mid, continuation)
        return stream
    }

    /// Calls `handler` with each RTP packet received on a media section, on the
    /// ICE thread as it arrives (nil stops it); false if there is no such
    /// section. The ICE thread waits for the handler: what it does delays this
    /// connection's other packets (a media receiver decodes there, about a
    /// millisecond per video frame), and it must never wait for the actor.
    @discardableResult
    public nonisolated func receiveRtp(mid: String, handler: (@Sendable (ReceivedRtp) -> Void)?) -> Bool {
        reception.setHandler(mid: mid, handler)
    }

    /// Sends one RTP payload on a media section with its negotiated payload type.
    /// Callable from any thread; it never waits for the actor.
    public nonisolated func sendRtp(mid: String, payload: [UInt8], timestamp: UInt32, marker: Bool = false)
        throws(PeerError)
    {
        try sendRtp(mid: mid, payloads: [payload], timestamp: timestamp, marker: marker)
    }

    /// Sends the packets of one frame (same timestamp) in one call; the marker
    /// goes on the last when `marker` is set (video frames). Callable from any
    /// thread (a media sender's pacing thread); it never waits for the actor.
    public nonisolated func sendRtp(mid: String, payloads: [[UInt8]], timestamp: UInt32, marker: Bool)
        throws(PeerError)
    {
        guard !transport.isClosed else { throw .closed }
        let numbered: (packets: [RtpPacket], first: Bool)
        do { numbered = try sending.packets(mid: mid, payloads: payloads, timestamp: timestamp, marker: marker) } catch
        {
            switch error {
            case .noSection(let mid): throw .invalidState("no media section \(mid)")
            case .doesNotSend(let mid): throw .invalidState("media section \(mid) does not send")
            }
        }
        for var packet in numbered.packets {
            congestion.stamp(&packet)
            guard transport.sendRtp(packet) else { throw .invalidState("not connected yet") }
        }
        // A first sender report at once, so the receiver can map RTP to wallclock early (A/V sync).
        if numbered.first { Task { await self.sendReports() } }
    }

    /// Asks the peer to resend lost packets of a stream it sends us (generic NACK, RFC 4585 §6.2.1).
    public func sendNack(mid: String, mediaSsrc: UInt32, sequences: [UInt16]) {
        guard state == .connected else { return }
        sendFeedback(mid: mid, mediaSsrc: mediaSsrc, lost: sequences, keyframe: false)
    }

    /// Asks the peer for a keyframe on a stream it sends us (PLI, RFC 4585 §6.3.1).
    public func requestKeyframe(mid: String, mediaSsrc: UInt32) {
        guard state == .connected else { return }
        sendFeedback(mid: mid, mediaSsrc: mediaSsrc, lost: [], keyframe: true)
    }

    /// NACK and PLI in one RTCP compound, from any thread, without waiting for
    /// the actor: a receiver asks the moment it sees a gap, from the ICE thread
    /// that delivered the packet. Through a task on a busy machine, the ask
    /// could come after the gap had been given up (seen: video packets lost
    /// under 5% loss with no NACK sent). False if nothing went out (no such
    /// section, nothing to ask, or no SRTP yet).
    @discardableResult
    public nonisolated func sendFeedback(mid: String, mediaSsrc: UInt32, lost: [UInt16], keyframe: Bool) -> Bool {
        guard !transport.isClosed, let sender = sending.feedbackSsrc(mid: mid) else { return false }
        var packets: [RtcpPacket] = []
        if !lost.isEmpty { packets.append(.nack(senderSsrc: sender, mediaSsrc: mediaSsrc, lost: lost)) }
        if keyframe { packets.append(.pli(senderSsrc: sender, mediaSsrc: mediaSsrc)) }
        return !packets.isEmpty && transport.sendRtcp(packets)
    }

    /// Seconds since the last datagram from the peer (DTLS, RTP or RTCP; libnice
    /// keeps STUN to itself), or since the connection was made if none came.
    /// A call with a media section hears RTCP at least once a second.
    public func secondsSinceLastPacket() -> Double {
        let last = transport.stats.lastReceived ?? started
        return (ContinuousClock.now - last).inSeconds
    }

    /// The sender's clock for an incoming stream, from its last sender report:
    /// what wallclock time an RTP timestamp stands for (RFC 3550 §6.4.1).
    public func senderClock(ssrc: UInt32) -> SenderClock? { rtcp.senderClocks[ssrc] }

    func handleRtcp(_ packets: [RtcpPacket]) {
        let arrival = NtpTime.from(unixSeconds: Date().timeIntervalSince1970)
        let heard = rtcp.received(packets, ours: Set(transceivers.map(\.info.sendSsrc)), arrivalNtp: arrival)
        for report in heard.senderReports { reception.noteSenderReport(ssrc: report.ssrc, ntpTime: report.ntpTime) }
        for ssrc in heard.keyframeRequests {
            if let transceiver = transceivers.first(where: { $0.info.sendSsrc == ssrc }) {
                emit(.keyframeRequested(mid: transceiver.info.mid))
            }
        }
    }

    /// Sender and receiver reports once a second (RFC 3550 §6.2, a fixed interval as WebRTC uses).
    func startRtcpTimer() {
        guard rtcpTask == nil, !transceivers.isEmpty else { return }
        rtcpTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                await self?.sendReports()
            }
        }
    }

    func sendReports() {
        guard state == .connected else { return }
        let packets = RtcpReporter.reports(
            sent: sending.sent, blocks: reception.reportBlocks(limit: 31), ourSsrc: transceivers.first?.info.sendSsrc,
            ntp: NtpTime.from(unixSeconds: Date().timeIntervalSince1970), now: .now)
        if !packets.isEmpty { transport.sendRtcp(packets) }
    }

    /// For tests: sends a datagram as it is on the selected pair, as a peer
    /// (or someone on the path) may send anything.
    func sendRawDatagram(_ datagram: [UInt8]) { transport.ice.send(datagram) }

    func updateCongestionControl() {
        guard negotiator.signaling == .stable, let local = localDescription, let remote = remoteDescription else {
            return
        }
        func extensionId(_ description: SessionDescription) -> Int? {
            description.media.first { !$0.isRejected && !$0.isDataChannel }?.headerExtensions
                .first { $0.uri == CongestionControl.uri }?.id
        }
        let ours = extensionId(local)
        let negotiated = ours.flatMap { id in extensionId(remote) == id ? UInt8(exactly: id) : nil }
        // A peer that asks for goog-remb on its video (aiortc) hears our estimate that way.
        let remb = remote.media.contains { media in
            !media.isRejected && media.kind == "video" && media.codecs.contains { $0.feedback.contains("goog-remb") }
        }
        congestion.setNegotiated(extensionId: negotiated, remb: remb)
        if negotiated != nil || remb, connection.dtlsConnected { startCongestionFeedback() }
    }

    func startCongestionFeedback() {
        guard congestionFeedbackTask == nil, congestion.isActive || congestion.sendsRemb else { return }
        congestionFeedbackTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: CongestionControl.feedbackInterval)
                guard let self else { return }
                self.sendCongestionFeedback()
                self.sendProbeIfDue()
            }
        }
    }

    /// The bitrate congestion control gives the track sent on `mid` (audio first,
    /// video the rest) and the loss the peer sees; nil when it has nothing to say
    /// (the peer speaks neither transport-wide feedback nor REMB). Any thread.
    public nonisolated func bitrateShare(mid: String) -> (bitrate: Int, loss: Double)? {
        let tracks = sending.sendingTracks(mid: mid)
        return congestion.share(isAudio: tracks.isAudio, audioTracks: tracks.audio, videoTracks: tracks.video)
    }

    /// Whether transport-wide congestion control was negotiated (both ends numbering and reporting).
    public nonisolated var congestionIsActive: Bool { congestion.isActive }

    /// What arrived since the last feedback, to the peer (from the feedback task, any thread).
    nonisolated func sendCongestionFeedback() {
        guard !transport.isClosed, let sender = sending.feedbackSenderSsrc else { return }
        let packets = congestion.feedback(senderSsrc: sender, mediaSsrc: reception.anyRemoteSsrc ?? 0)
        if !packets.isEmpty { transport.sendRtcp(packets) }
    }

    /// Payload types, SSRCs and the mid extension the peer will use, for BUNDLE demux.
}
