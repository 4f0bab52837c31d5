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
    private var subscribers: [UInt64: AsyncStream<PeerEvent>.Continuation] = [:]
    private var nextSubscriber: UInt64 = 0
    /// How the connection was configured.
    public nonisolated let configuration: PeerConfiguration
    nonisolated let certificate: DtlsCertificate
    /// Made with the certificate, so that the handshake does not wait for it.
    nonisolated let dtlsContext: DtlsContext
    nonisolated let transport: SecureTransport
    private nonisolated let directory = ChannelDirectory()

    /// Offer/answer, sections and transceivers (pure; this actor carries out its effects).
    private var negotiator = Negotiator()
    /// The pending local offer restarted ICE (a rollback cannot undo that in libnice:
    /// the next description carries the new credentials and candidates).
    private var pendingOfferRestartedIce = false
    /// The remote candidates: held, screened, given to ICE once, or counted as dropped.
    private var candidates = CandidatePool()
    private var transceivers: [Transceiver] { negotiator.transceivers }
    private var localDescription: SessionDescription? { negotiator.localDescription }
    private var remoteDescription: SessionDescription? { negotiator.remoteDescription }
    private var localCandidates: [String] = []
    private var gatheringComplete = false
    private var gathering = false
    private var dtlsRole: DtlsTransport.Role?
    /// Set by an ICE restart until the next local description is built: that
    /// description carries the candidates (libnice keeps them across a restart).
    private var describeCandidates = false
    private var announcedTracks: Set<String> = []
    /// ICE and DTLS together as the W3C connection state.
    private var connection = ConnectionStateMachine()
    private var state: PeerConnectionState { connection.state }
    private var association: SctpAssociation?
    private var remoteMaxMessageSize: UInt64 = 65536
    /// The largest SCTP packet the peer takes, from its SDP (PathMtuProbe).
    private var remoteSctpPacket: Int?
    /// Where the choice of SCTP's packet size stands (`PathMtuProbe`).
    private var sctpPacketSizing = SctpPacketSizing.undecided
    private var pendingChannels: [DataChannel] = []
    /// Incoming RTP: routed, counted and delivered on the ICE thread.
    private nonisolated let reception: RtpReception
    /// Outgoing RTP: numbered, counted and kept for NACKs on the sending thread.
    private nonisolated let sending = RtpSending()
    /// Transport-wide congestion control, when both ends negotiated it.
    private nonisolated let congestion = CongestionControl()
    private var congestionFeedbackTask: Task<Void, Never>?
    /// RTCP reports both ways: round-trip time, the peer's loss, the senders' clocks.
    private var rtcp = RtcpReporter()
    private var rtcpTask: Task<Void, Never>?
    private var gatheringWaiters: [CheckedContinuation<Void, Never>] = []
    private let started: ContinuousClock.Instant

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
                congestion.received(packet)
                reception.deliver(packet)
            }
        ) { event in
            // Data-channel traffic goes straight to its channel (on the SCTP queue),
            // and NACKs are answered from the retransmission cache on the ICE
            // thread: through the actor, a busy moment delayed retransmissions
            // past the receiver's wait. The rest is control, for the actor.
            switch event {
            case .rtcp(let packets):
                congestion.handle(packets)
                for case .nack(_, let mediaSsrc, let lost) in packets {
                    for var packet in sending.retransmissions(ssrc: mediaSsrc, sequences: lost) {
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
        }
        self.transportSink = transportSink
        created.value = transport
        if let controlling = configuration.willOffer {
            gathering = Self.gather(transport.ice, controlling: controlling)
        }
        // The loop runs on this actor: no hop per event (every RTP packet is one).
        // It ends when `close` finishes the stream.
        Task { [weak self] in await self?.pump(transportEvents) }
    }

    /// Starts gathering as soon as the ICE role is known (createOffer, or the
    /// peer's offer), before the local description is set: the first gathering
    /// costs a few milliseconds. Candidates found before the local description
    /// are surfaced with it.
    private func gatherEarly(controlling: Bool) {
        guard !gathering else { return }
        gathering = Self.gather(transport.ice, controlling: controlling)
    }

    /// Fixes the ICE role (libnice needs it before gathering) and gathers; whether that started.
    private static func gather(_ ice: IceAgent, controlling: Bool) -> Bool {
        ice.setControlling(controlling)
        return (try? ice.gather()) != nil
    }

    /// Candidates gathered before the first local description, surfaced with it.
    private var candidatesSurfaced = false

    private func surfaceCandidates() {
        guard !candidatesSurfaced else { return }
        candidatesSurfaced = true
        let mid = localDescription?.media.first?.mid ?? "0"
        for line in localCandidates { emit(.localCandidate(candidate: line, sdpMid: mid, sdpMLineIndex: 0)) }
        if gatheringComplete { emit(.gatheringComplete) }
    }

    private let transportSink: AsyncStream<SecureTransport.Event>.Continuation

    private func pump(_ events: AsyncStream<SecureTransport.Event>) async {
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

    private func unsubscribe(_ id: UInt64) { subscribers[id] = nil }

    private func emit(_ event: PeerEvent) {
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

    /// Creates a data channel; it opens once the connection is up (`.open` on its events).
    public func createDataChannel(_ parameters: DataChannelParameters) -> DataChannel {
        let channel = DataChannel(parameters: parameters)
        negotiator.addDataSection()
        if let association {
            open(channel, on: association)
        } else {
            pendingChannels.append(channel)
        }
        return channel
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
    private func localTransport() -> Negotiator.LocalTransport {
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
    private var lastCreated: (text: String, description: SessionDescription)?

    private func remember(_ description: SessionDescription) -> String {
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

    /// Adds a trickled remote candidate (`candidate:...`); an empty string means end of candidates.
    public func addIceCandidate(_ candidate: String) throws(PeerError) {
        switch add(candidate) {
        case .drop where remoteDescription == nil:  // too many held before the description
            throw .invalidState("more than \(CandidatePool.maxPending) candidates came before any description; dropped")
        case .drop(let reason):
            throw .badDescription("unusable candidate \(candidate.prefix(100)): \(reason)")
        default:
            return
        }
    }

    /// Carries out `CandidatePool`'s verdict on a line: ICE gets IP literals at
    /// once, host names once resolved (off the actor). Returns the verdict
    /// (`.drop` when ICE refused the candidate too).
    private func add(_ line: String) -> CandidatePool.Verdict {
        let verdict = candidates.receive(line, described: remoteDescription != nil)
        return carryOut(verdict)
    }

    private func carryOut(_ verdict: CandidatePool.Verdict) -> CandidatePool.Verdict {
        switch verdict {
        case .endOfCandidates:
            transport.ice.remoteCandidatesComplete()
        case .use(let text):
            do { try transport.ice.addRemoteCandidate(text) } catch {
                candidates.refused()
                return .drop(reason: "refused by ICE")
            }
        case .resolve(let candidate, let host):
            Task { [weak self] in
                let address = await RemoteCandidateScreen.resolve(host)
                await self?.resolved(candidate, host: host, address: address)
            }
        case .drop(let reason):
            Logger("peer").info("remote candidate dropped: \(reason)")
        case .held, .known:
            break
        }
        return verdict
    }

    private func resolved(_ candidate: Candidate, host: String, address: String?) {
        _ = carryOut(candidates.resolved(candidate, host: host, address: address))
    }

    /// The local description with the candidates gathered so far (for peers that do not trickle).
    public func currentLocalDescription() -> String? {
        guard var description = localDescription else { return nil }
        let candidates = localCandidates.compactMap { try? Candidate(parsing: $0) }
        for index in description.media.indices where !description.media[index].isRejected {
            description.media[index].candidates = candidates
            description.media[index].endOfCandidates = gatheringComplete
        }
        return description.description
    }

    /// Waits until ICE gathering is complete (bounded).
    public func waitForGatheringComplete(timeout: Duration = .seconds(10)) async -> Bool {
        if gatheringComplete { return true }
        let timeoutTask = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.releaseGatheringWaiters()
        }
        await withCheckedContinuation { gatheringWaiters.append($0) }
        timeoutTask.cancel()
        return gatheringComplete
    }

    private func releaseGatheringWaiters() {
        let waiters = gatheringWaiters
        gatheringWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    private func parse(_ text: String) throws(PeerError) -> SessionDescription {
        do { return try SessionDescription(parsing: text) } catch { throw .badDescription(error.description) }
    }

    private func startGathering() throws(PeerError) {
        if !gathering {
            do { try transport.ice.gather() } catch { throw .transport(error.description) }
            gathering = true
        }
        announce(connection.negotiating())
    }

    /// Tells the RTP paths which sections exist, their codecs and directions.
    private func updateRtpPaths() {
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
                    midExtensionId: transceiver.midExtensionId)
            })
        updateCongestionControl()
    }

    /// Transport-wide congestion control runs when both descriptions, settled,
    /// map its extension to the same id; its feedback goes out every 100 ms
    /// once DTLS is up.
    private func updateCongestionControl() {
        guard negotiator.signaling == .stable, let local = localDescription, let remote = remoteDescription else {
            return
        }
        func extensionId(_ description: SessionDescription) -> Int? {
            description.media.first { !$0.isRejected && !$0.isDataChannel }?.headerExtensions
                .first { $0.uri == CongestionControl.uri }?.id
        }
        let ours = extensionId(local)
        let negotiated = ours.flatMap { id in extensionId(remote) == id ? UInt8(exactly: id) : nil }
        congestion.setNegotiated(extensionId: negotiated)
        if negotiated != nil, connection.dtlsConnected { startCongestionFeedback() }
    }

    private func startCongestionFeedback() {
        guard congestionFeedbackTask == nil, congestion.isActive else { return }
        congestionFeedbackTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: CongestionControl.feedbackInterval)
                guard let self else { return }
                self.sendCongestionFeedback()
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
    private nonisolated func sendCongestionFeedback() {
        guard !transport.isClosed, let sender = sending.feedbackSenderSsrc else { return }
        let packets = congestion.feedback(senderSsrc: sender, mediaSsrc: reception.anyRemoteSsrc ?? 0)
        if !packets.isEmpty { transport.sendRtcp(packets) }
    }

    /// Payload types, SSRCs and the mid extension the peer will use, for BUNDLE demux.
    private func learnRouting(from description: SessionDescription) {
        for media in description.media where !media.isRejected && !media.isDataChannel {
            guard let mid = media.mid else { continue }
            for codec in media.codecs { reception.learn(payloadType: codec.payloadType, mid: mid) }
            for ssrc in media.sendingSsrcs { reception.learn(ssrc: ssrc, mid: mid) }
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

    private func prepareDtls(role: DtlsTransport.Role) throws(PeerError) {
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

    private func handle(_ event: SecureTransport.Event) {
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

    private func handleIce(_ event: IceEvent) {
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
            if let path = IcePath(local: local, remote: remote) { Logger("ice").info("pair in use: \(path)") }
        }
    }

    private func announce(_ change: PeerConnectionState?) {
        if let change { emit(.connectionStateChanged(change)) }
    }

    /// Where the connection is now (ICE and DTLS together).
    public var connectionState: PeerConnectionState { state }

    // MARK: Data channels

    private func startSctpIfNegotiated() {
        guard association == nil, negotiator.dataNegotiated, let role = dtlsRole
        else { return }
        // usrsctp fixes its packet size when the association starts: probe first.
        let packetSize: Int?
        switch sctpPacketSizing {
        case .probing:
            return  // `.pathProbed` comes back here
        case .decided(let size):
            packetSize = size
        case .undecided:
            if let size = PathMtuProbe.size(remoteAdvertised: remoteSctpPacket), transport.ice.selectedPathIsLocal {
                sctpPacketSizing = .probing
                transport.probePath(size: size)
                return
            }
            sctpPacketSizing = .decided(nil)
            packetSize = nil
        }
        let transport = self.transport
        let directory = self.directory
        let created = WeakReference<SctpAssociation>()
        // SCTP events join the transport's ordered event stream; its handler
        // sends data-channel traffic straight to the channels.
        let association = SctpAssociation(
            isDtlsClient: role == .client, onOutbound: { [weak transport] packet in transport?.sendSctp(packet) },
            onEvent: { [weak transport] event in
                // A channel the peer opens is registered here, on the SCTP queue,
                // before any message that follows its DCEP open is handled. Done
                // on the actor, a message sent right after the open could find
                // no channel yet and be lost (seen about once in 60 setups).
                if case .channelOpen(let id, let parameters, true) = event, let association = created.value {
                    let channel = DataChannel(parameters: parameters)
                    channel.bind(association: association, id: id)
                    directory.insert(channel, id: id)
                    channel.didOpen()
                }
                transport?.relay(.sctp(event))
            })
        created.value = association
        self.association = association
        transport.attach(association)
        association.start(remoteMaxMessageSize: remoteMaxMessageSize, packetSize: packetSize)
        for channel in pendingChannels { open(channel, on: association) }
        pendingChannels = []
    }

    private func open(_ channel: DataChannel, on association: SctpAssociation) {
        let directory = self.directory
        // Listed while it opens: a connection closed before SCTP answers must
        // close it too (it stayed "connecting" for ever, and a file waiting for it hung).
        directory.opening(channel)
        association.openChannel(channel.parameters) { result in
            guard directory.opened(channel), case .success(let id) = result else {
                channel.didClose()
                return
            }
            channel.bind(association: association, id: id)
            directory.insert(channel, id: id)
        }
    }

    private func handleSctp(_ event: SctpAssociation.Event) {
        switch event {
        case .connected:
            break
        case .channelOpen(let id, _, let remote):
            if remote {
                // Made and opened on the SCTP queue (startSctpIfNegotiated).
                if let channel = directory.channel(id) { emit(.dataChannel(channel)) }
            } else {
                directory.channel(id)?.didOpen()
            }
        case .channelClosed(let id):
            Logger("sctp").info("data channel \(id) closed")
            directory.remove(id)?.didClose()
        case .closed(let reason):
            // A close from either side is normal; a lost association is worth a warning.
            Logger("sctp").log(reason == "closed" ? .info : .warning) {
                "SCTP association ended: \(reason); its data channels are closed"
            }
            for channel in directory.removeAll() { channel.didClose() }
        case .message, .bufferedAmountLow:
            break  // delivered directly
        }
    }

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

    private func handleRtcp(_ packets: [RtcpPacket]) {
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
    private func startRtcpTimer() {
        guard rtcpTask == nil, !transceivers.isEmpty else { return }
        rtcpTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                await self?.sendReports()
            }
        }
    }

    private func sendReports() {
        guard state == .connected else { return }
        let packets = RtcpReporter.reports(
            sent: sending.sent, blocks: reception.reportBlocks(limit: 31), ourSsrc: transceivers.first?.info.sendSsrc,
            ntp: NtpTime.from(unixSeconds: Date().timeIntervalSince1970), now: .now)
        if !packets.isEmpty { transport.sendRtcp(packets) }
    }

    /// For tests: sends a datagram as it is on the selected pair, as a peer
    /// (or someone on the path) may send anything.
    func sendRawDatagram(_ datagram: [UInt8]) { transport.ice.send(datagram) }

    // MARK: Stats and close

    /// A snapshot of the transport's and the media's statistics.
    public func stats() -> PeerStats {
        let counters = transport.stats
        let pair = transport.ice.selectedPair
        var stats = PeerStats(
            bytesSent: counters.bytesSent, bytesReceived: counters.bytesReceived, packetsSent: counters.packetsSent,
            packetsReceived: counters.packetsReceived, srtpDropped: counters.srtpDropped,
            strayDropped: counters.strayDropped,
            simulatedDrops: counters.simulatedDrops, roundTripTime: rtcp.roundTripTime,
            packetsLostByPeer: rtcp.lostByPeer,
            inbound: reception.inbound,
            selectedPair: pair, droppedCandidates: candidates.dropped,
            connectionLosses: connection.iceLosses, sctpPacketSize: sctpPacketSizing.size)
        stats.congestion = congestion.stats
        (stats.malformedDropped, stats.sendFailures) = (counters.malformedDropped, counters.sendFailures)
        if let pair {
            let turn = Set(transport.ice.configuration.turnServers.map { "\($0.transport)" })
            stats.path = IcePath(local: pair.local, remote: pair.remote, turnTransports: turn)
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
private enum SctpPacketSizing {
    case undecided, probing
    case decided(Int?)

    var size: Int? {
        if case .decided(let size) = self { return size }
        return nil
    }
}
