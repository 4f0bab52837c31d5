import AsyncExtras
import CarrierLog
import Foundation
import RtcFileTransfer
import RtcMedia
import RtcPeer

/// Places and answers calls over one signaling provider, several at once (a
/// bot answering many friends). The call API of the reference SDK: make a
/// call, end it, decide on incoming calls (accept, reject, busy), follow
/// their state on `events()`.
public actor CallClient {
    /// How calls are made and answered.
    public struct Configuration: Sendable {
        /// The peer connections' configuration; the provider's ICE servers are added to it.
        public var peer: PeerConfiguration
        /// Ringing, connecting and recovery timeouts.
        public var timeouts: CallMachine.Timeouts
        /// Answer `event: ringing` to incoming offers (peer-webrtc's shouldConfirmRinging).
        public var confirmRinging: Bool
        /// Who may call: signals from anyone else are dropped. The Carrier
        /// provider delivers only friends' invites; this is a second check.
        public var mayCall: @Sendable (String) async -> Bool
        /// Which file protocol calls send files in (docs/file-protocol.md).
        public var fileProtocol = FileProtocolChoice.automatic
        /// Trickle ICE: descriptions go with the candidates gathered so far and
        /// later ones follow as `candidate` signals. Off: each description waits
        /// for gathering to complete and carries every candidate (one line each
        /// way, for peers that cannot trickle).
        public var trickle = true
        /// Send `action: accept` after the answer (the reference peers' habit; `carrier rtc` does not).
        public var announceAccept = true
        /// Hold local candidates until our description has gone (for peers that
        /// cannot take a candidate before the description, as `carrier rtc`'s).
        public var holdCandidates = false
        /// Every call offers audio (its RTCP tells that the peer is alive). Sessions
        /// (data only, `CarrierSessions`) turn this off; ICE consent then watches the peer.
        public var alwaysAudio = true
        /// Calls under way at most, both directions: an offer past it is
        /// refused with bye `busy` before anything is built for it (each call
        /// holds a peer connection, sockets and threads).
        public var maxCalls = 32
        /// Calls under way with one peer at most (a friend that offers again
        /// and again cannot take the node's whole `maxCalls`).
        public var maxCallsPerPeer = 4

        /// A configuration for calls between friends, anyone allowed unless `mayCall` says otherwise.
        public init(
            peer: PeerConfiguration = PeerConfiguration(), timeouts: CallMachine.Timeouts = .init(),
            confirmRinging: Bool = true, mayCall: @escaping @Sendable (String) async -> Bool = { _ in true }
        ) {
            self.peer = peer
            self.timeouts = timeouts
            self.confirmRinging = confirmRinging
            self.mayCall = mayCall
        }
    }

    private let provider: any SignalingProvider
    private let configuration: Configuration
    private var sessions: [String: CallSession] = [:]
    private var subscribers: [UInt64: AsyncStream<CallEvent>.Continuation] = [:]
    private var nextSubscriber: UInt64 = 0
    private var listener: Task<Void, Never>?
    /// Signals for calls not known yet (a candidate overtaking its offer): at most 32 per call id, 64 ids.
    private var early: [String: [RtcSignal]] = [:]
    private var finished: [String: Call] = [:]
    private let clock = ContinuousClock.now
    /// What the sessions report, in the order they report it: a task per event
    /// (as it was) lets a later event overtake an earlier one.
    private let reports: AsyncStream<CallEvent>
    private let reportSink: AsyncStream<CallEvent>.Continuation
    private var reporter: Task<Void, Never>?

    /// A client on a signaling provider; `start()` before anything else.
    public init(provider: any SignalingProvider, configuration: Configuration = Configuration()) {
        self.provider = provider
        self.configuration = configuration
        (reports, reportSink) = AsyncStream<CallEvent>.makeStream()
    }

    deinit { reportSink.finish() }

    /// Starts listening to the provider; call once before anything else.
    public func start() async {
        guard listener == nil else { return }
        let reports = reports
        reporter = Task { [weak self] in
            for await event in reports { await self?.emit(event) }
        }
        let inputs = await provider.inputs()
        listener = Task { [weak self] in
            for await input in inputs { await self?.receive(input) }
        }
    }

    /// Ends every call and stops listening.
    public func stop() async {
        for session in sessions.values { session.post(.hangUp) }
        listener?.cancel()
        listener = nil
    }

    /// Every call event from now on, for one reader (a subscription per call).
    public func events() -> AsyncStream<CallEvent> {
        let (stream, continuation) = AsyncStream<CallEvent>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        let id = nextSubscriber
        nextSubscriber += 1
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        return stream
    }

    private func unsubscribe(_ id: UInt64) { subscribers[id] = nil }

    private func emit(_ event: CallEvent) {
        if case .ended(let call) = event {
            let id = call.id.lowercased()
            finished[id] = call
            if let session = sessions.removeValue(forKey: id) {
                // Kept until its last statistics are copied out, then let go: a
                // closed session still holds its connection's objects (measured:
                // about 80 kB a call, kept for the last `endedCallsKept` calls).
                endedSessions[id] = session
                Task { [weak self] in await self?.settle(id, await Self.statistics(of: session)) }
            }
            endedOrder.append(id)
            // A bot runs for long: keep the last calls' outcome and statistics, not all of them.
            while endedOrder.count > Self.endedCallsKept {
                let oldest = endedOrder.removeFirst()
                finished[oldest] = nil
                endedSessions[oldest] = nil
                endedStats[oldest] = nil
            }
        }
        for continuation in subscribers.values { continuation.yield(event) }
    }

    /// Ended calls whose `call(_:)` and `mediaStats(_:)` stay available
    /// (about 5 kB each: a bot that takes calls for weeks holds at most this many).
    public static let endedCallsKept = 64
    private var endedOrder: [String] = []

    // MARK: Calls

    /// Calls a peer. Audio is always offered (every call has an audio section,
    /// whose RTCP also tells that the peer is alive); add `.video` and `.data`.
    /// It returns once `media`'s files are open, and the call may have rung or
    /// connected by then: take `events()` before calling, and read the stream
    /// for this call's id after it returns, so that no event is missed.
    public func makeCall(to peer: String, options: [RtcSignal.MediaOption] = [.audio], media: CallMedia = CallMedia())
        async throws -> Call
    {
        let dialed = Date()
        guard await configuration.mayCall(peer) else { throw CallError.notAFriend(peer) }
        // The files open (libavformat's probe, the encoders: 10-16 ms for a WAV and a
        // 640x480 Y4M) while the offer goes out; media starts after DTLS, later.
        let opening = Task.detached { try media.openSources() }
        var options = options
        if configuration.alwaysAudio, !options.contains(.audio) { options.insert(.audio, at: 0) }
        var call = Call(
            id: UUID().uuidString.lowercased(), peer: peer, direction: .outgoing, options: options, startDate: dialed)
        // The peer's call reached us first and nobody answered it yet: glare, decided as for offers.
        for (id, session) in sessions where session.peerId == peer {
            let existing = await session.call
            guard existing.direction == .incoming, existing.state == .ringing else { continue }
            if id > call.id {
                call.state = .ended
                call.endReason = .glare
                call.endDate = Date()
                emit(.ended(call))
                return call
            }
            session.post(.lostGlare)  // our offer ends their outgoing call on their side
        }
        let connection = try await makePeerConnection(offering: true)
        if options.contains(.audio) {
            await connection.addTransceiver(.audio, direction: media.sends(.audio) ? .sendrecv : .recvonly)
        }
        if options.contains(.video) {
            await connection.addTransceiver(.video, direction: media.sends(.video) ? .sendrecv : .recvonly)
        }
        let (machine, outputs) = CallMachine.outgoing(now: 0, timeouts: configuration.timeouts)
        let session = makeSession(call, machine: machine, connection: connection, media: media)
        await session.setMedia(media, opening: opening)
        sessions[call.id] = session
        await session.start(outputs)
        try await Self.opened(opening, or: session)
        return call
    }

    /// A file that cannot be opened ends the call (its offer or answer may be out) and is the caller's error.
    private static func opened(
        _ opening: Task<[MediaKind: any MediaSource], any Error>, or session: CallSession
    ) async throws {
        do { _ = try await opening.value } catch {
            session.post(.hangUp)
            throw error
        }
    }

    /// Accepts an incoming call with what to send and where to record.
    public func accept(_ callId: String, media: CallMedia = CallMedia()) async throws {
        let session = try session(callId)
        // Opened while the answer goes out, as for makeCall.
        let opening = Task.detached { try media.openSources() }
        await session.setMedia(media, opening: opening)
        session.post(.accept)
        try await Self.opened(opening, or: session)
    }

    /// Declines an incoming call (bye `declined`).
    public func reject(_ callId: String) throws { try session(callId).post(.reject) }

    /// Declines an incoming call as busy (bye `busy`).
    public func busy(_ callId: String) throws { try session(callId).post(.busy) }

    /// Hangs up (or cancels an outgoing call that is still ringing).
    public func endCall(_ callId: String) throws { try session(callId).post(.hangUp) }

    /// A call under way, or one of the last ended (`endedCallsKept`).
    public func call(_ callId: String) async -> Call? {
        if let session = sessions[callId.lowercased()] { return await session.call }
        return finished[callId.lowercased()]
    }

    /// The callIds of the calls under way.
    public var activeCalls: [String] { Array(sessions.keys) }

    /// Offers refused: an id that is not UUID-like, or past `maxCalls` or `maxCallsPerPeer`.
    public private(set) var refusedCalls = 0

    /// Adds video to a call under way (sending `path`, or receive-only if nil): a renegotiation in place.
    public func addVideo(_ path: String?, callId: String) async throws { try await session(callId).addVideo(path) }

    /// Restarts ICE on a call under way (new credentials, connectivity checks again; DTLS and media go on).
    public func restartIce(callId: String) throws { try session(callId).post(.renegotiate(iceRestart: true)) }

    /// Mutes or unmutes what we send of one kind.
    public func setMuted(_ muted: Bool, kind: MediaKind, callId: String) async throws {
        try await session(callId).setMuted(muted, kind: kind)
    }

    /// Plays another file from now on (same kind).
    public func replaceSource(_ path: String, kind: MediaKind, callId: String) async throws {
        try await session(callId).replaceSource(path, kind: kind)
    }

    /// Sends a file over the call's data channel; returns when the receiver confirmed (or refused) it.
    public func sendFile(_ path: String, callId: String) async throws -> FileTransferEndpoint.Outcome {
        try await session(callId).sendFile(path)
    }

    /// Cancels the call's transfers in progress, both ways.
    public func cancelFiles(callId: String) async throws { try await session(callId).cancelFiles() }

    /// Sends a text message on the call's data channel (the call needs the data
    /// option); the peer gets a `.message` event (or its onReceiveMessage).
    public func sendText(_ text: String, callId: String) async throws {
        try await session(callId).sendMessage(.text(text))
    }

    /// Sends bytes on the call's data channel (not while this side sends a file).
    public func sendData(_ bytes: [UInt8], callId: String) async throws {
        try await session(callId).sendMessage(.binary(bytes))
    }

    /// Opens another data channel on a call under way (it needs the data
    /// option). Channels whose protocol starts with `carrier-` are the
    /// application's: the peer gets them as `.dataChannel` events.
    public func openDataChannel(_ parameters: DataChannelParameters, callId: String) async throws -> DataChannel {
        try await session(callId).openDataChannel(parameters)
    }

    /// The call's connection statistics (the selected pair, round-trip time, bytes), while it runs.
    public func peerStats(_ callId: String) async throws -> PeerStats { try await session(callId).peerStats() }

    /// Waits until every file the call sends has been sent (at once if it sends none, or loops).
    public func waitUntilMediaSent(callId: String) async throws { try await session(callId).waitUntilMediaSent() }

    /// Media statistics of a call (while it runs, or its last ones).
    public func mediaStats(_ callId: String) async throws -> CallMediaStats {
        if let stats = endedStats[callId.lowercased()] { return stats }
        return await Self.statistics(of: try session(callId))
    }

    /// A session's media statistics now: the path in use, or its last one once closed.
    private static func statistics(of session: CallSession) async -> CallMediaStats {
        let (sent, received) = await session.mediaStats()
        let peer = await session.peerStats()
        let lastPath = await session.path
        var stats = await CallMediaStats(
            sent: sent, received: received, setupMs: session.setupMs, iceMs: session.iceMs, path: peer.path ?? lastPath)
        (stats.rtxPacketsSent, stats.rtxPacketsReceived) = (peer.rtxPacketsSent, peer.rtxPacketsReceived)
        return stats
    }

    /// Sessions of ended calls until their last statistics are copied out.
    private var endedSessions: [String: CallSession] = [:]
    /// The last statistics of ended calls (bounded with `finished`).
    private var endedStats: [String: CallMediaStats] = [:]

    private func settle(_ id: String, _ stats: CallMediaStats) {
        if finished[id] != nil { endedStats[id] = stats }
        endedSessions[id] = nil
    }

    private func session(_ callId: String) throws -> CallSession {
        let key = callId.lowercased()
        guard let session = sessions[key] ?? endedSessions[key] else { throw CallError.noSuchCall(callId) }
        return session
    }

    private func makePeerConnection(offering: Bool) async throws -> PeerConnection {
        connectionsMade.withLock { $0 += 1 }
        return try await Self.makePeerConnection(configuration.peer, provider: provider, offering: offering)
    }

    /// Peer connections this client made (each call's, once it is placed or accepted).
    public nonisolated var peerConnectionsMade: Int { connectionsMade.withLock { $0 } }
    private let connectionsMade = Locked(0)

    /// A peer connection with the provider's ICE servers added (which may
    /// ask the network: Express's TURN credentials).
    private static func makePeerConnection(
        _ configuration: PeerConfiguration, provider: any SignalingProvider, offering: Bool
    ) async throws -> PeerConnection {
        var peerConfiguration = configuration
        peerConfiguration.iceServers += await provider.iceServers()
        peerConfiguration.willOffer = offering
        return try PeerConnection(configuration: peerConfiguration)
    }

    /// A session; an incoming one (no `connection`) makes its connection when it is accepted.
    private func makeSession(
        _ call: Call, machine: CallMachine, connection: PeerConnection?, media: CallMedia
    ) -> CallSession {
        let (peerConfiguration, provider, made) = (configuration.peer, provider, connectionsMade)
        let session = CallSession(
            call: call, machine: machine, peer: connection,
            makePeer: {
                made.withLock { $0 += 1 }
                return try await Self.makePeerConnection(peerConfiguration, provider: provider, offering: false)
            },
            provider: provider, media: media,
            options: .init(
                fileProtocol: configuration.fileProtocol, trickle: configuration.trickle,
                announceAccept: configuration.announceAccept, holdCandidates: configuration.holdCandidates),
            report: { [reportSink] event in reportSink.yield(event) })
        return session
    }

    // MARK: Incoming signals

    private func receive(_ input: SignalingInput) async {
        switch input {
        case .undecodable(let error, let from):
            emit(.badSignal(from: from, error: error))
        case .undelivered(let signal, let peer, _):
            guard let id = signal.callId?.lowercased(), let session = sessions[id], session.peerId == peer else {
                return
            }
            session.post(.undeliverable)
        case .signal(let signal, let from):
            guard await configuration.mayCall(from) else { return }  // only friends
            await route(signal, from: from)
        }
    }

    private func route(_ signal: RtcSignal, from peer: String) async {
        // Old peers send no callId: such a signal belongs to the one call with that peer.
        let id =
            signal.callId?.lowercased()
            ?? sessions.first(where: { $0.value.peerId == peer })?.key ?? "legacy-\(peer)"
        // An id names folders and files further up: a peer's string that is not
        // UUID-like never becomes a call (its offer is refused with a bye).
        guard CallId.isAcceptable(id) else {
            refusedCalls += signal.type == .offer ? 1 : 0
            emit(
                .badSignal(from: peer, error: .undecodable("a callId of \(id.utf8.count) bytes that is not UUID-like")))
            if signal.type == .offer {
                try? await provider.send(RtcSignal(type: .bye, reason: .error, callId: signal.callId), to: peer)
            }
            return
        }
        if let session = sessions[id] {
            guard session.peerId == peer else { return }  // someone else's call id: ignored
            if signal.type == .bye, await lostGlare(session) {
                session.post(.lostGlare)
                return
            }
            session.post(.remote(signal))
            return
        }
        guard signal.type == .offer, let sdp = signal.sdp else {
            // A signal before its offer: keep a few, briefly; a stray one for a finished call is dropped.
            guard finished[id] == nil, signal.type == .candidate else { return }
            var held = early[id] ?? []
            held.append(signal)
            early[id] = Array(held.suffix(32))
            if early.count > 64, let any = early.keys.first(where: { $0 != id }) { early[any] = nil }
            return
        }
        guard finished[id] == nil else { return }  // an old offer replayed
        // A renegotiation (an ICE restart, most often) of a call this client
        // never had: the call of a process of ours that is gone (killed, say),
        // whose signals the peer's node sent again when our link came back.
        // Not a new call: it rings nowhere, and it is no glare with ours.
        if Self.isRenegotiation(sdp) {
            // A bye is a courtesy: a peer that does not get it gives up on its own timeout.
            try? await provider.send(RtcSignal(type: .bye, reason: .unknown, callId: signal.callId), to: peer)
            return
        }
        // Both called at once: the call with the greater id goes on, on both sides.
        // Ours wins: the peer drops its own call when our offer reaches it (here in
        // `route`, or in `makeCall` if ours arrived before it placed its call); the bye
        // makes sure, should it have taken ours as an incoming call first.
        if let survivor = await resolveGlare(peer: peer, incomingId: id), survivor != id {
            try? await provider.send(RtcSignal(type: .bye, reason: .busy, callId: signal.callId), to: peer)
            return
        }
        // Bounded per peer and per node before anything is built: refused as busy.
        let withPeer = sessions.values.filter { $0.peerId == peer }.count
        guard sessions.count < configuration.maxCalls, withPeer < configuration.maxCallsPerPeer else {
            refusedCalls += 1
            Logger("calls").warning(
                "a call from \(peer) refused as busy: \(sessions.count) calls under way (at most "
                    + "\(configuration.maxCalls)), \(withPeer) with this peer (at most \(configuration.maxCallsPerPeer))"
            )
            try? await provider.send(RtcSignal(type: .bye, reason: .busy, callId: signal.callId), to: peer)
            return
        }
        let options = signal.options ?? [.audio]
        let call = Call(id: id, peer: peer, direction: .incoming, options: options)
        // No peer connection yet: it is made when the call is accepted.
        let (machine, outputs) = CallMachine.incoming(offer: sdp, now: 0, timeouts: configuration.timeouts)
        let session = makeSession(call, machine: machine, connection: nil, media: CallMedia())
        sessions[id] = session
        // Ringing goes out before the application hears of the call: its answer
        // (a quick reject, say) must not overtake it.
        if configuration.confirmRinging {
            // Ringing is advisory: a caller that misses it still gets the answer or the timeout.
            try? await provider.send(RtcSignal(type: .event, callId: signal.callId, event: .ringing), to: peer)
        }
        await session.start(outputs)
        for early in early.removeValue(forKey: id) ?? [] { session.post(.remote(early)) }
    }

    /// Whether an offer renegotiates a call rather than opening one. Only our
    /// own stack's offers tell (origin user `carrier-rtc`, whose session
    /// version is 1 in a call's first offer and grows with every description
    /// after, RFC 3264 §8); any other offer counts as a new call.
    static func isRenegotiation(_ sdp: String) -> Bool {
        guard let origin = sdp.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("o=") }) else {
            return false
        }
        let fields = origin.dropFirst(2).split(separator: " ")
        guard fields.count >= 3, fields[0] == "carrier-rtc", let version = UInt64(fields[2]) else { return false }
        return version > 1
    }

    /// A bye for a ringing call while a call with the same peer and a greater id
    /// exists: the peer's side of a glare, not a refusal.
    private func lostGlare(_ session: CallSession) async -> Bool {
        let call = await session.call
        guard call.state == .ringing || call.state == .remoteRinging else { return false }
        return sessions.contains { $0.key > call.id && $0.value.peerId == call.peer }
    }

    /// Glare: an offer from a peer we are calling ourselves, neither answered.
    /// Returns the id of the call that survives, ending ours if it loses.
    private func resolveGlare(peer: String, incomingId: String) async -> String? {
        for (id, session) in sessions where session.peerId == peer {
            let call = await session.call
            guard call.direction == .outgoing, call.state == .ringing || call.state == .remoteRinging else { continue }
            if id > incomingId { return id }
            session.post(.lostGlare)
            return incomingId
        }
        return nil
    }
}

/// Media statistics of one call.
public struct CallMediaStats: Sendable {
    /// Each sender's statistics.
    public var sent: [MediaSender.Stats]
    /// Each receiver's statistics.
    public var received: [MediaReceiver.Stats]
    /// From the offer sent (or the answer begun) to connected, and of that, to ICE connected.
    public var setupMs: Double?
    /// (See `setupMs`.)
    public var iceMs: Double?
    /// The ICE path in use (while the call runs), or the last one (after it ended).
    public var path: IcePath?
    /// Packets on our RTX streams and the peer's (`PeerStats.rtxPacketsSent`, `rtxPacketsReceived`).
    public var rtxPacketsSent: UInt64 = 0
    /// (See `rtxPacketsSent`.)
    public var rtxPacketsReceived: UInt64 = 0
}

/// The file protocol a call sends files in (docs/file-protocol.md).
public enum FileProtocolChoice: Sendable {
    /// The binary protocol when the peer speaks it (it says so on the data
    /// channel, see `FileTransferEndpoint.protocolName`), JSON chunks otherwise.
    case automatic
    /// Always the binary protocol (peers known to speak it: `carrier rtc`'s).
    case binary
    /// Always the reference peers' JSON chunks.
    case chunked
}
