import RtcDTLS
import RtcRTP
import RtcSCTP
import RtcSDP

/// Offer/answer (JSEP, RFC 8829) as a pure component: sections, transceivers
/// and the data section in; descriptions out, and for each description
/// applied, what the transport must do about it. No sockets, no clocks:
/// `PeerConnection` drives it and carries out its effects on ICE, DTLS and
/// the RTP paths (as str0m and pion keep negotiation apart from transport),
/// and Tests/RtcPeerTests/NegotiatorTests runs two of them against each other.
struct Negotiator: Sendable {
    enum Section: Sendable {
        case media(Int)
        case data(String)
        case rejected(MediaDescription)
    }

    /// What the local side puts in a description besides its sections.
    struct LocalTransport: Sendable {
        var ufrag: String
        var pwd: String
        var fingerprint: Fingerprint
        /// Candidates to carry in the description (after an ICE restart), and whether gathering is done.
        var candidates: [Candidate] = []
        var gatheringComplete = false
    }

    /// What applying the peer's description asks of the transport.
    struct RemoteEffects: Sendable {
        var credentials: (ufrag: String, pwd: String)
        /// The first remote description: the ICE role follows (the offerer controls).
        var first = false
        /// The peer changed its ICE credentials: it restarted ICE (and in an offer, so must we).
        var iceRestarted = false
        /// Set for an answer: our DTLS role, from the peer's `a=setup`.
        var dtlsRole: DtlsTransport.Role?
        var candidates: [String] = []
        var endOfCandidates = false
        var remoteMaxMessageSize: UInt64?
        /// The largest SCTP packet the peer takes (PathMtuProbe), if it says.
        var remoteSctpPacket: Int?
    }

    private(set) var signaling = SignalingState.stable
    private(set) var sections: [Section] = []
    private(set) var transceivers: [Transceiver] = []
    private(set) var dataMid: String?
    private var nextMid = 0
    let sessionId: UInt64
    private(set) var sessionVersion: UInt64 = 1
    private(set) var localDescription: SessionDescription?
    private(set) var remoteDescription: SessionDescription?
    /// The local description before the pending local offer, restored by a rollback.
    private var stableLocalDescription: SessionDescription?

    init(sessionId: UInt64 = UInt64.random(in: 1...(UInt64(Int64.max)))) {
        self.sessionId = sessionId
    }

    var cname: String { "carrier-\(sessionId % 1_000_000)" }

    // MARK: Sections

    mutating func addTransceiver(_ kind: MediaKind, direction: Direction) -> TransceiverInfo {
        let mid = allocateMid()
        let transceiver = Transceiver(
            info: TransceiverInfo(
                mid: mid, kind: kind, direction: direction, codec: Transceiver.defaultCodecs(kind).first,
                sendSsrc: UInt32.random(in: 1...UInt32.max)),
            midExtensionId: 1, transportCcExtensionId: CongestionControl.offeredId, cname: cname)
        transceivers.append(transceiver)
        sections.append(.media(transceivers.count - 1))
        return transceiver.info
    }

    /// A data section for the next offer, unless there is one or it is too late to add one here.
    mutating func addDataSection() {
        guard dataMid == nil, signaling == .stable, remoteDescription == nil || localDescription == nil else { return }
        let mid = allocateMid()
        dataMid = mid
        sections.append(.data(mid))
    }

    /// Changes what a section does (before an offer, or between the peer's offer
    /// and our answer, where it is matched with what the peer offered).
    mutating func setDirection(_ direction: Direction, mid: String) {
        guard let index = transceivers.firstIndex(where: { $0.info.mid == mid }) else { return }
        if signaling == .haveRemoteOffer, let remote = remoteDescription?.media.first(where: { $0.mid == mid }) {
            transceivers[index].info.direction = Self.answerDirection(
                ours: direction, theirs: remote.direction ?? .sendrecv)
        } else {
            transceivers[index].info.direction = direction
        }
    }

    /// Whether both sides agreed on a data section.
    var dataNegotiated: Bool {
        dataMid != nil && remoteDescription?.media.contains(where: { $0.isDataChannel && !$0.isRejected }) == true
    }

    private mutating func allocateMid() -> String {
        defer { nextMid += 1 }
        var mid = "\(nextMid)"
        while midInUse(mid) {
            nextMid += 1
            mid = "\(nextMid)"
        }
        return mid
    }

    private func midInUse(_ mid: String) -> Bool {
        dataMid == mid || transceivers.contains { $0.info.mid == mid }
    }

    // MARK: Descriptions

    func createOffer(_ transport: LocalTransport) throws(PeerError) -> SessionDescription {
        if case .failure(let error) = signaling.applyingLocal(.offer) { throw error }
        return build(isOffer: true, transport)
    }

    func createAnswer(_ transport: LocalTransport) throws(PeerError) -> SessionDescription {
        if case .failure(let error) = signaling.applyingLocal(.answer) { throw error }
        return build(isOffer: false, transport)
    }

    /// Applies our own description (an offer in stable or replacing our pending
    /// one, an answer to the peer's offer); for an answer, our DTLS role.
    mutating func setLocal(_ description: SessionDescription) throws(PeerError) -> DtlsTransport.Role? {
        let type: SdpType = signaling == .haveRemoteOffer ? .answer : .offer
        let next: SignalingState
        switch signaling.applyingLocal(type) {
        case .success(let state): next = state
        case .failure(let error): throw error
        }
        var role: DtlsTransport.Role?
        switch signaling {
        case .stable:
            stableLocalDescription = localDescription
        case .haveRemoteOffer:
            guard let remote = remoteDescription else { throw .invalidState("no remote offer") }
            let remoteSetup = remote.media.first.flatMap { remote.setup(for: $0) } ?? .actpass
            role = remoteSetup == .active ? .server : .client
        case .haveLocalOffer:
            break  // a new local offer replaces the last one
        }
        signaling = next
        localDescription = description
        sessionVersion += 1
        return role
    }

    /// Drops our pending offer (JSEP §4.1.10.2). Sections added for it stay.
    mutating func rollback() throws(PeerError) {
        switch signaling.applyingLocal(.rollback) {
        case .success(let next): signaling = next
        case .failure(let error): throw error
        }
        localDescription = stableLocalDescription
    }

    /// Applies the peer's description of `type`; what the transport must do about it.
    /// A description that does not fit (state, sections, credentials) changes nothing.
    mutating func setRemote(_ description: SessionDescription, type: SdpType) throws(PeerError) -> RemoteEffects {
        let next: SignalingState
        switch signaling.applyingRemote(type) {
        case .success(let state): next = state
        case .failure(let error): throw error
        }
        guard let first = description.media.first(where: { !$0.isRejected }) else {
            throw .badDescription("no media section to connect")
        }
        guard let credentials = description.iceCredentials(for: first) else {
            throw .badDescription("no ICE credentials (a=ice-ufrag/a=ice-pwd)")
        }
        guard !description.fingerprints(for: first).isEmpty else {
            throw .badDescription("no DTLS fingerprint (a=fingerprint)")
        }
        let previous = remoteDescription.flatMap { old in
            old.media.first(where: { !$0.isRejected }).flatMap { old.iceCredentials(for: $0) }
        }
        var effects = RemoteEffects(credentials: credentials)
        effects.first = previous == nil
        effects.iceRestarted = previous.map { $0 != credentials } ?? false
        if type == .offer { adoptRemoteOffer(description) }
        if type == .answer {
            let remoteSetup = description.setup(for: first) ?? .active
            effects.dtlsRole = remoteSetup == .passive ? .client : .server
            adoptRetransmission(from: description)
        }
        signaling = next
        remoteDescription = description
        for media in description.media where !media.isRejected {
            effects.candidates += media.candidates.map(\.description)
            if media.isDataChannel {
                effects.remoteMaxMessageSize = media.maxMessageSize ?? 65536
                effects.remoteSctpPacket = media.otherAttributes.first { $0.name == PathMtuProbe.attribute }?.value
                    .flatMap { Int($0) }
            }
        }
        effects.endOfCandidates = description.media.contains(where: \.endOfCandidates)
        return effects
    }

    /// The answerer takes the offer's sections: existing mids keep their
    /// transceiver, new audio/video sections get one, the data section is noted.
    /// Linear in the number of sections: each mid is looked up in a
    /// dictionary, and transceivers added before the offer wait in a queue per
    /// kind (searching the lists for each section cost the cube of their number:
    /// 9 s of CPU for 1,000 sections).
    private mutating func adoptRemoteOffer(_ offer: SessionDescription) {
        var adopted: [Section] = []
        var byMid: [String: Int] = [:]
        for (index, transceiver) in transceivers.enumerated() { byMid[transceiver.info.mid] = index }
        let offeredMids = Set(offer.media.compactMap(\.mid))
        // Transceivers whose mid the offer does not name: they take the peer's mids, in order.
        var unused: [MediaKind: [Int]] = [:]
        for (index, transceiver) in transceivers.enumerated() where !offeredMids.contains(transceiver.info.mid) {
            unused[transceiver.info.kind, default: []].append(index)
        }
        var nextUnused: [MediaKind: Int] = [:]
        for media in offer.media {
            guard let mid = media.mid else {
                adopted.append(.rejected(media))
                continue
            }
            if media.isDataChannel {
                dataMid = mid
                adopted.append(.data(mid))
                continue
            }
            guard let kind = MediaKind(rawValue: media.kind), !media.isRejected,
                let codec = Transceiver.match(media.codecs, kind: kind)
            else {
                adopted.append(.rejected(media))
                continue
            }
            let index: Int
            let queued = unused[kind] ?? []
            let position = nextUnused[kind] ?? 0
            if let existing = byMid[mid] {
                index = existing
            } else if position < queued.count {
                // A transceiver added before the offer arrived takes the peer's mid.
                index = queued[position]
                nextUnused[kind] = position + 1
                transceivers[index].info.mid = mid
                byMid[mid] = index
            } else {
                transceivers.append(
                    Transceiver(
                        info: TransceiverInfo(
                            mid: mid, kind: kind, direction: .sendrecv, codec: codec,
                            sendSsrc: UInt32.random(in: 1...UInt32.max)),
                        cname: cname))
                index = transceivers.count - 1
                byMid[mid] = index
            }
            transceivers[index].info.codec = codec
            transceivers[index].info.rtxPayloadType =
                Transceiver.retransmission(for: codec, in: media.codecs)?
                .payloadType
            let remoteDirection = media.direction ?? .sendrecv
            transceivers[index].info.direction = Self.answerDirection(
                ours: transceivers[index].info.direction, theirs: remoteDirection)
            transceivers[index].midExtensionId = media.headerExtensions.first { $0.uri == RtpRouter.midExtensionURI }
                .map { UInt8($0.id) }
            transceivers[index].transportCcExtensionId = media.headerExtensions
                .first { $0.uri == CongestionControl.uri && (1...14).contains($0.id) }.map { UInt8($0.id) }
            adopted.append(.media(index))
        }
        sections = adopted
    }

    /// RTX as the peer's answer settles it: on for a section whose answer
    /// keeps our `rtx` format for the codec we send, off otherwise.
    private mutating func adoptRetransmission(from answer: SessionDescription) {
        for media in answer.media where !media.isRejected {
            guard let mid = media.mid, let index = transceivers.firstIndex(where: { $0.info.mid == mid }),
                let codec = transceivers[index].info.codec
            else { continue }
            let theirs = Transceiver.retransmission(for: codec, in: media.codecs)
            let ours = Transceiver.retransmission(
                for: codec, in: Transceiver.defaultCodecs(transceivers[index].info.kind))
            transceivers[index].info.rtxPayloadType = theirs.flatMap {
                $0.payloadType == ours?.payloadType ? $0.payloadType : nil
            }
        }
    }

    static func answerDirection(ours: Direction, theirs: Direction) -> Direction {
        let send = (ours == .sendrecv || ours == .sendonly) && (theirs == .sendrecv || theirs == .recvonly)
        let receive = (ours == .sendrecv || ours == .recvonly) && (theirs == .sendrecv || theirs == .sendonly)
        switch (send, receive) {
        case (true, true): return .sendrecv
        case (true, false): return .sendonly
        case (false, true): return .recvonly
        case (false, false): return .inactive
        }
    }

    private func build(isOffer: Bool, _ transport: LocalTransport) -> SessionDescription {
        var description = SessionDescription(
            // The origin's user name tells a peer of this stack (the calls layer's file fast path).
            origin: .init(
                username: "carrier-rtc", sessionId: sessionId, sessionVersion: sessionVersion, address: "127.0.0.1"))
        description.msidSemantic = "WMS *"
        let setup: SetupRole
        if isOffer {
            setup = .actpass
        } else {
            let remote = remoteDescription
            let remoteSetup = remote?.media.first.flatMap { remote?.setup(for: $0) } ?? .actpass
            setup = remoteSetup == .active ? .passive : .active
        }
        var bundle: [String] = []
        for section in sections {
            var media: MediaDescription
            switch section {
            case .media(let index):
                media = mediaSection(transceivers[index], isOffer: isOffer)
            case .data(let mid):
                media = MediaDescription(kind: "application", proto: "UDP/DTLS/SCTP", formats: ["webrtc-datachannel"])
                media.mid = mid
                media.sctpPort = 5000
                media.maxMessageSize = UInt64(SctpAssociation.maxMessageSize)
                media.otherAttributes.append(Attribute(PathMtuProbe.attribute, String(PathMtuProbe.largest)))
            case .rejected(let remote):
                var rejected = MediaDescription(
                    kind: remote.kind, port: 0, proto: remote.proto, formats: remote.formats)
                rejected.mid = remote.mid
                rejected.connection = "IN IP4 0.0.0.0"
                description.media.append(rejected)
                continue
            }
            media.connection = "IN IP4 0.0.0.0"
            media.iceUfrag = transport.ufrag
            media.icePwd = transport.pwd
            media.iceOptions = ["trickle"]
            media.fingerprints = [transport.fingerprint]
            media.setup = setup
            media.candidates = transport.candidates
            media.endOfCandidates = !transport.candidates.isEmpty && transport.gatheringComplete
            if let mid = media.mid { bundle.append(mid) }
            description.media.append(media)
        }
        if !bundle.isEmpty { description.groups = [.init(semantics: "BUNDLE", mids: bundle)] }
        return description
    }

    private func mediaSection(_ transceiver: Transceiver, isOffer: Bool) -> MediaDescription {
        let info = transceiver.info
        var codecs = isOffer ? Transceiver.defaultCodecs(info.kind) : [info.codec].compactMap { $0 }
        if !isOffer, let codec = info.codec, let rtx = info.rtxPayloadType {
            codecs.append(
                RtpCodec(
                    payloadType: rtx, name: "rtx", clockRate: codec.clockRate, parameters: "apt=\(codec.payloadType)"))
        }
        var media = MediaDescription(
            kind: info.kind.rawValue, proto: "UDP/TLS/RTP/SAVPF", formats: codecs.map { "\($0.payloadType)" })
        media.codecs = codecs
        media.mid = info.mid
        media.direction = info.direction
        media.rtcp = "9 IN IP4 0.0.0.0"
        media.rtcpMux = true
        media.rtcpReducedSize = true
        if let id = transceiver.midExtensionId {
            media.headerExtensions = [HeaderExtension(id: Int(id), uri: RtpRouter.midExtensionURI)]
        }
        if let id = transceiver.transportCcExtensionId {
            media.headerExtensions.append(HeaderExtension(id: Int(id), uri: CongestionControl.uri))
        }
        if info.direction == .sendrecv || info.direction == .sendonly {
            let stream = "carrier-\(sessionId % 100_000)"
            media.msid = "\(stream) \(info.kind.rawValue)-\(info.mid)"
            media.ssrcs = [
                SsrcAttribute(ssrc: info.sendSsrc, attribute: "cname", value: transceiver.cname),
                SsrcAttribute(ssrc: info.sendSsrc, attribute: "msid", value: media.msid),
            ]
            // Retransmissions' own stream (RFC 4588 §8.7), offered and kept when the answer agrees.
            if codecs.contains(where: \.isRetransmission) {
                media.ssrcs += [
                    SsrcAttribute(ssrc: info.rtxSsrc, attribute: "cname", value: transceiver.cname),
                    SsrcAttribute(ssrc: info.rtxSsrc, attribute: "msid", value: media.msid),
                ]
                media.ssrcGroups = [SsrcGroup(semantics: "FID", ssrcs: [info.sendSsrc, info.rtxSsrc])]
            }
        }
        return media
    }
}
