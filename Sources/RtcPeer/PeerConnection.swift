import AsyncExtras
import CarrierLog
import Foundation
import RtcDTLS
import RtcICE
import RtcRTP
import RtcSCTP
import RtcSDP
import RtcSRTP

/// A WebRTC peer connection (the RTCPeerConnection of the W3C API, JSEP per
/// RFC 8829): offer/answer, one BUNDLEd ICE transport with DTLS, SRTP for
/// media sections and SCTP for data channels.
///
/// Signaling and state live on this actor; packets do not pass through it
/// (see `SecureTransport`). Events arrive in order on every stream from `events()`.
public actor PeerConnection {
    var subscribers: [UInt64: AsyncStream<PeerEvent>.Continuation] = [:]
    var nextSubscriber: UInt64 = 0
    /// How the connection was configured.
    public nonisolated let configuration: PeerConfiguration
    nonisolated let certificate: DtlsCertificate
    /// Made with the certificate, so that the handshake does not wait for it.
    nonisolated let dtlsContext: DtlsContext
    nonisolated let transport: SecureTransport
    nonisolated let directory = ChannelDirectory()

    /// Offer/answer, sections and transceivers (pure; this actor carries out its effects).
    var negotiator = Negotiator()
    /// The pending local offer restarted ICE (a rollback cannot undo that in libnice:
    /// the next description carries the new credentials and candidates).
    var pendingOfferRestartedIce = false
    /// The remote candidates: held, screened, given to ICE once, or counted as dropped.
    var candidates = CandidatePool()
    var transceivers: [Transceiver] { negotiator.transceivers }
    var localDescription: SessionDescription? { negotiator.localDescription }
    var remoteDescription: SessionDescription? { negotiator.remoteDescription }
    var localCandidates: [String] = []
    var gatheringComplete = false
    var gathering = false
    var dtlsRole: DtlsTransport.Role?
    /// Set by an ICE restart until the next local description is built: that
    /// description carries the candidates (libnice keeps them across a restart).
    var describeCandidates = false
    var announcedTracks: Set<String> = []
    /// ICE and DTLS together as the W3C connection state.
    var connection = ConnectionStateMachine()
    var state: PeerConnectionState { connection.state }
    var association: SctpAssociation?
    var remoteMaxMessageSize: UInt64 = 65536
    /// The largest SCTP packet the peer takes, from its SDP (PathMtuProbe).
    var remoteSctpPacket: Int?
    /// Where the choice of SCTP's packet size stands (`PathMtuProbe`).
    var sctpPacketSizing = SctpPacketSizing.undecided
    var pendingChannels: [DataChannel] = []
    /// Incoming RTP: routed, counted and delivered on the ICE thread.
    nonisolated let reception: RtpReception
    /// Outgoing RTP: numbered, counted and kept for NACKs on the sending thread.
    nonisolated let sending = RtpSending()
    /// Transport-wide congestion control, when both ends negotiated it.
    nonisolated let congestion = CongestionControl()
    var congestionFeedbackTask: Task<Void, Never>?
    /// RTCP reports both ways: round-trip time, the peer's loss, the senders' clocks.
    var rtcp = RtcpReporter()
    var rtcpTask: Task<Void, Never>?
    var gatheringWaiters: [CheckedContinuation<Void, Never>] = []
    let started: ContinuousClock.Instant

    /// A connection with a fresh DTLS certificate; nothing is gathered or sent until it negotiates.
    public init(configuration: PeerConfiguration = PeerConfiguration()) throws {
        self.configuration = configuration
        certificate = try DtlsCertificate()
        dtlsContext = try DtlsContext(certificate: certificate)
        let (transportEvents, transportSink) = AsyncStream<SecureTransport.Event>.makeStream()
        let directory = self.directory
        let sending = self.sending
        let congestion = self.congestion
        let created = WeakReference<SecureTransport>()
        let started = ContinuousClock.now
        self.started = started
        let reception = RtpReception(started: started)
        self.reception = reception
        transport = try SecureTransport(
            ice: try configuration.iceConfiguration(controlling: true), simulatedLoss: configuration.simulatedRtpLoss,
            onRtp: { packet in
                // RTP goes to its media section's stream on the ICE thread, never through the actor.
                let delivered = reception.deliver(packet)
                congestion.received(
                    packet, clockRate: delivered?.clockRate, retransmission: delivered?.retransmission ?? false)
            },
            onEvent: { event in
                // Data-channel traffic goes straight to its channel (on the SCTP queue),
                // and NACKs are answered from the retransmission cache on the ICE
                // thread: through the actor, a busy moment delayed retransmissions
                // past the receiver's wait. The rest is control, for the actor.
                switch event {
                case .rtcp(let packets):
                    congestion.handle(packets)
                    for case .nack(_, let mediaSsrc, let lost) in packets {
                        for var packet in sending.retransmissions(
                            ssrc: mediaSsrc, sequences: lost, allow: congestion.mayRetransmit)
                        {
                            congestion.stamp(&packet)
                            created.value?.sendRtp(packet)
                        }
                    }
                    transportSink.yield(event)
                case .sctp(.message(let id, let data, let binary)):
                    directory.channel(id)?.didReceive(data, binary: binary)
                case .sctp(.bufferedAmountLow(let id)):
                    directory.channel(id)?.didDrain()
                default:
                    transportSink.yield(event)
                }
            })
        self.transportSink = transportSink
        created.value = transport
        if let controlling = configuration.willOffer {
            gathering = Self.gather(transport.ice, controlling: controlling)
        }
        // The loop runs on this actor: no hop per event (every RTP packet is one).
        // It ends when `close` finishes the stream.
        Task { [weak self] in await self?.pump(transportEvents) }
    }

    /// Candidates gathered before the first local description, surfaced with it.
    var candidatesSurfaced = false

    let transportSink: AsyncStream<SecureTransport.Event>.Continuation

    func pump(_ events: AsyncStream<SecureTransport.Event>) async {
        for await event in events { handle(event) }
    }

    /// A stream of this connection's events from now on; each call gives a new subscriber.
    public func events() -> AsyncStream<PeerEvent> {
        let (stream, continuation) = AsyncStream<PeerEvent>.makeStream()
        nextSubscriber += 1
        let id = nextSubscriber
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        if state == .closed { continuation.finish() } else { subscribers[id] = continuation }
        return stream
    }

    func unsubscribe(_ id: UInt64) { subscribers[id] = nil }

    func emit(_ event: PeerEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    // MARK: Media sections and channels

    /// Adds a media section (audio or video) that sends and/or receives.
    @discardableResult
    public func addTransceiver(_ kind: MediaKind, direction: Direction = .sendrecv) -> TransceiverInfo {
        let info = negotiator.addTransceiver(kind, direction: direction)
        updateRtpPaths()
        // libsrtp's one-time start (self-tests) takes ~7 ms: media will need it,
        // so it runs now, off the connection's path. Data-only connections skip it.
        SrtpSession.prepareInBackground()
        return info
    }

    /// Every media section: mid, kind, direction, codec and SSRC.
    public var transceiverInfos: [TransceiverInfo] { transceivers.map(\.info) }

    /// Changes what a section does (before an offer, or between the peer's offer
    /// and our answer, where it is matched with what the peer offered).
    public func setDirection(_ direction: Direction, mid: String) {
        negotiator.setDirection(direction, mid: mid)
        updateRtpPaths()
    }

    // MARK: Offer and answer

    /// An offer for the current sections. Called again once connected it is a
    /// renegotiation (new transceivers, directions); with `iceRestart` the
    /// ICE credentials change and connectivity checks start over (RFC 8445 §9,
    /// JSEP §5.2.1) while DTLS, SCTP and RTP keep their sessions.
    public func createOffer(iceRestart: Bool = false) throws(PeerError) -> String {
        guard state != .closed else { throw .closed }
        if case .failure(let error) = negotiator.signaling.applyingLocal(.offer) { throw error }
        if iceRestart, gathering {
            do { try transport.ice.restart() } catch { throw .transport(error.description) }
            candidates.iceRestarted()
            describeCandidates = true
            pendingOfferRestartedIce = true
        }
        if remoteDescription == nil { gatherEarly(controlling: true) }
        return remember(try negotiator.createOffer(localTransport()))
    }

    /// An answer to the remote offer set with `setRemoteDescription` (JSEP §5.3).
    public func createAnswer() throws(PeerError) -> String {
        guard state != .closed else { throw .closed }
        return remember(try negotiator.createAnswer(localTransport()))
    }

    /// Our credentials, fingerprint and (after an ICE restart) candidates, for a description.
    func localTransport() -> Negotiator.LocalTransport {
        let (ufrag, pwd) = transport.ice.localCredentials
        var local = Negotiator.LocalTransport(
            ufrag: ufrag, pwd: pwd, fingerprint: Fingerprint(algorithm: "sha-256", bytes: certificate.sha256))
        if describeCandidates {
            // Once: libnice keeps its candidates across a restart; the next description carries them.
            describeCandidates = false
            // Our own candidates come from libnice and always parse; the SDP carries what does.
            local.candidates = localCandidates.compactMap { try? Candidate(parsing: $0) }
            local.gatheringComplete = gatheringComplete
        }
        return local
    }

    /// The last description made here and its text: setting it as the local
    /// description then needs no parse (the first parse in a process costs
    /// 0.1-0.2 ms, on the path of every setup).
    var lastCreated: (text: String, description: SessionDescription)?

    func remember(_ description: SessionDescription) -> String {
        let text = description.description
        lastCreated = (text, description)
        return text
    }

    /// Applies a description made by `createOffer` or `createAnswer` (its
    /// type follows from the signaling state, as JSEP's implicit form does).
    public func setLocalDescription(_ text: String) throws(PeerError) {
        guard state != .closed else { throw .closed }
        let description: SessionDescription
        if let lastCreated, lastCreated.text == text {
            description = lastCreated.description
        } else {
            description = try parse(text)
        }
        let firstOffer = negotiator.signaling == .stable && remoteDescription == nil
        if let role = try negotiator.setLocal(description) { try prepareDtls(role: role) }
        // The first offerer controls ICE; renegotiation keeps the roles.
        if firstOffer { transport.ice.setControlling(true) }
        updateRtpPaths()
        try startGathering()
        surfaceCandidates()
    }

    /// Drops our pending offer and returns to stable (JSEP §4.1.10.2), as the
    /// polite side of perfect negotiation does when the peer's offer collides
    /// with ours. Sections and channels added for the offer stay, to be
    /// offered again. An ICE restart the offer made stays made: the next
    /// description carries its credentials and candidates.
    public func rollback() throws(PeerError) {
        guard state != .closed else { throw .closed }
        try negotiator.rollback()
        if pendingOfferRestartedIce { describeCandidates = true }
        pendingOfferRestartedIce = false
        updateRtpPaths()
    }

    /// The current JSEP signaling state.
    public var signalingState: SignalingState { negotiator.signaling }

    /// Applies the peer's description of the given type. An offer is taken
    /// only in stable (while an offer of ours is pending, roll it back first:
    /// that is perfect negotiation's choice, made by the caller); an answer
    /// only while our offer is pending; `.rollback` of the peer's offer is
    /// not supported. A description that does not fit changes nothing.
    public func setRemoteDescription(_ text: String, type: SdpType) throws(PeerError) {
        guard state != .closed else { throw .closed }
        if case .failure(let error) = negotiator.signaling.applyingRemote(type) { throw error }
        let description = try parse(text)
        let transceiversBefore = transceivers.count
        let effects = try negotiator.setRemote(description, type: type)
        if transceivers.count > transceiversBefore { SrtpSession.prepareInBackground() }  // as in addTransceiver
        if type == .offer {
            if effects.first {
                transport.ice.setControlling(false)
                gatherEarly(controlling: false)
            }
            if effects.iceRestarted {
                // The peer restarts ICE: so do we (new local credentials in our answer).
                do { try transport.ice.restart() } catch { throw .transport(error.description) }
                candidates.iceRestarted()
                describeCandidates = true
            }
        }
        transport.ice.setRemoteCredentials(ufrag: effects.credentials.ufrag, pwd: effects.credentials.pwd)
        // The RTP paths know the sections before `.track` goes out: a receiver
        // may attach to one at once (`receiveRtp` does not wait for the actor).
        updateRtpPaths()
        learnRouting(from: description)
        if let size = effects.remoteMaxMessageSize { remoteMaxMessageSize = size }
        if effects.remoteMaxMessageSize != nil { remoteSctpPacket = effects.remoteSctpPacket }
        for line in effects.candidates + candidates.described() { _ = add(line) }
        if effects.endOfCandidates { transport.ice.remoteCandidatesComplete() }
        if let role = effects.dtlsRole {
            pendingOfferRestartedIce = false
            try prepareDtls(role: role)
        }
    }

    func parse(_ text: String) throws(PeerError) -> SessionDescription {
        do { return try SessionDescription(parsing: text) } catch { throw .badDescription(error.description) }
    }

    /// Tells the RTP paths which sections exist, their codecs and directions.
    func updateRtpPaths() {
        var clockRates: [String: UInt32] = [:]
        for transceiver in transceivers {
            clockRates[transceiver.info.mid] = transceiver.info.codec?.clockRate ?? 90000
        }
        reception.setSections(clockRates)
        sending.setSections(
            transceivers.map { transceiver in
                let info = transceiver.info
                return RtpSending.Section(
                    mid: info.mid, ssrc: info.sendSsrc, payloadType: info.codec?.payloadType,
                    clockRate: info.codec?.clockRate ?? 90000,
                    sends: info.direction == .sendrecv || info.direction == .sendonly,
                    midExtensionId: transceiver.midExtensionId, rtxPayloadType: info.rtxPayloadType,
                    rtxSsrc: info.rtxSsrc)
            })
        updateCongestionControl()
    }

    /// Transport-wide congestion control runs when both descriptions, settled,
    /// map its extension to the same id; its feedback goes out every 100 ms
    /// once DTLS is up.
    func learnRouting(from description: SessionDescription) {
        for media in description.media where !media.isRejected && !media.isDataChannel {
            guard let mid = media.mid else { continue }
            for codec in media.codecs { reception.learn(payloadType: codec.payloadType, mid: mid) }
            for ssrc in media.sendingSsrcs { reception.learn(ssrc: ssrc, mid: mid) }
            // Their retransmissions (RFC 4588): which format pairs with which, which stream repairs which.
            for codec in media.codecs where codec.isRetransmission {
                if let apt = codec.parameterMap["apt"].flatMap({ UInt8($0) }) {
                    reception.learnRetransmission(payloadType: codec.payloadType, originalPayloadType: apt)
                }
            }
            for group in media.ssrcGroups where group.semantics == "FID" && group.ssrcs.count == 2 {
                reception.learnRetransmission(ssrc: group.ssrcs[1], originalSsrc: group.ssrcs[0])
            }
            if let id = media.headerExtensions.first(where: { $0.uri == RtpRouter.midExtensionURI })?.id {
                reception.learnMidExtension(id: UInt8(id))
            }
            if let kind = MediaKind(rawValue: media.kind), media.direction != .recvonly, media.direction != .inactive,
                announcedTracks.insert(mid).inserted
            {
                emit(.track(mid: mid, kind: kind))
            }
        }
    }

    // MARK: Transport events

    func prepareDtls(role: DtlsTransport.Role) throws(PeerError) {
        guard dtlsRole == nil, let remote = remoteDescription else { return }
        dtlsRole = role
        let fingerprints = remote.media.filter { !$0.isRejected }.flatMap { remote.fingerprints(for: $0) }
            .map { DtlsTransport.RemoteFingerprint(algorithm: $0.algorithm, bytes: $0.bytes) }
        do {
            try transport.prepareDtls(role: role, context: dtlsContext, remoteFingerprints: fingerprints)
        } catch {
            throw .transport("\(error)")
        }
    }

    func handle(_ event: SecureTransport.Event) {
        switch event {
        case .ice(let ice):
            handleIce(ice)
        case .dtlsConnected:
            announce(connection.dtlsUp())
            startSctpIfNegotiated()
            startRtcpTimer()
            startCongestionFeedback()
        case .pathProbed(let size):
            sctpPacketSizing = .decided(size)
            startSctpIfNegotiated()
        case .dtlsFailed(let reason):
            announce(connection.dtlsFailed(reason))
        case .dtlsClosed:
            close()
        case .sctp(let sctpEvent):
            handleSctp(sctpEvent)
        case .rtcp(let packets):
            handleRtcp(packets)
        }
    }

    /// Why the connection failed, when it did.
    public var failureReason: String? { connection.failureReason }

    func handleIce(_ event: IceEvent) {
        switch event {
        case .localCandidate(let line):
            localCandidates.append(line)
            guard candidatesSurfaced else { return }
            let firstMid = localDescription?.media.first?.mid ?? "0"
            emit(.localCandidate(candidate: line, sdpMid: firstMid, sdpMLineIndex: 0))
        case .gatheringComplete:
            gatheringComplete = true
            releaseGatheringWaiters()
            if candidatesSurfaced { emit(.gatheringComplete) }
        case .stateChanged(let iceState):
            Logger("ice").info("ICE \(iceState.rawValue)")
            emit(.iceStateChanged(iceState))
            // The transport starts DTLS (or sends what it held) on its own thread when ICE connects.
            announce(connection.ice(iceState))
        case .selectedPair(let local, let remote):
            if let path = IcePath(local: local, remote: remote, turnTransport: transport.ice.turnTransport) {
                Logger("ice").info("pair in use: \(path)")
            }
        case .relayLost(let server):
            Logger("ice").warning("TURN server \(server) dropped our allocation")
        }
    }

    func announce(_ change: PeerConnectionState?) {
        if let change { emit(.connectionStateChanged(change)) }
    }

    /// Where the connection is now (ICE and DTLS together).
    public var connectionState: PeerConnectionState { state }

    // MARK: Stats and close

    /// A snapshot of the transport's and the media's statistics.
    public func stats() -> PeerStats {
        let counters = transport.stats
        let pair = transport.ice.selectedPair
        var stats = PeerStats(
            bytesSent: counters.bytesSent, bytesReceived: counters.bytesReceived, packetsSent: counters.packetsSent,
            packetsReceived: counters.packetsReceived, srtpDropped: counters.srtpDropped,
            strayDropped: counters.strayDropped,
            simulatedDrops: counters.simulatedDrops, simulatedPaddingDrops: counters.simulatedPaddingDrops,
            roundTripTime: rtcp.roundTripTime,
            packetsLostByPeer: rtcp.lostByPeer,
            inbound: reception.inbound,
            selectedPair: pair, droppedCandidates: candidates.dropped,
            connectionLosses: connection.iceLosses, sctpPacketSize: sctpPacketSizing.size)
        stats.congestion = congestion.stats
        (stats.estimateSentInRemb, stats.rembsSent) = (congestion.receiveSideEstimate, congestion.rembsSent)
        (stats.malformedDropped, stats.sendFailures) = (counters.malformedDropped, counters.sendFailures)
        (stats.rtxPacketsSent, stats.rtxPacketsReceived) = (
            UInt64(sending.rtxPacketsSent), reception.rtxPacketsReceived
        )
        if let pair {
            stats.path = IcePath(local: pair.local, remote: pair.remote, turnTransport: transport.ice.turnTransport)
        }
        return stats
    }

    /// Closes every channel and the transport, and frees what they hold.
    public func close() {
        guard state != .closed else { return }
        rtcpTask?.cancel()
        rtcpTask = nil
        congestionFeedbackTask?.cancel()
        congestionFeedbackTask = nil
        for channel in directory.removeAll() { channel.didClose() }
        for channel in pendingChannels { channel.didClose() }
        pendingChannels = []
        reception.finishAll()
        sending.releaseCache()
        transport.close()
        transportSink.finish()
        association = nil
        announce(connection.close())
        releaseGatheringWaiters()
        for continuation in subscribers.values { continuation.finish() }
        subscribers = [:]
    }
}

/// Whether SCTP's packet size is still to be chosen, being probed, or chosen
/// (nil: usrsctp's default).
enum SctpPacketSizing {
    case undecided, probing
    case decided(Int?)

    var size: Int? {
        if case .decided(let size) = self { return size }
        return nil
    }
}
