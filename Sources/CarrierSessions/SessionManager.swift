import Foundation
import RtcCalls
import RtcPeer

/// Sessions with friends over one signaling provider (the reference's
/// CarrierSessionManager): opens them, accepts the friends' (each with the
/// services this node offers), and follows them. On a Carrier node the
/// provider is `CarrierSignalingProvider` on the `session` extension
/// (`SessionManager.start(on:)` in CarrierSignaling).
///
/// A session is negotiated as a call is (offer, answer, candidates, bye as
/// `RtcSignal`s; docs/sessions.md), with data only and without ringing, by
/// the same call driver: sessions recover from outages the way calls do.
public actor SessionManager {
    /// The extension sessions use on the invite channel.
    public static let extensionName = "session"

    /// How sessions are made and who may make them.
    public struct Configuration: Sendable {
        /// The peer connections' settings (addresses, ICE servers); the provider's ICE servers are added.
        public var peer: PeerConfiguration
        /// Who may open sessions (checked both ways): friends only on a node.
        public var mayConnect: @Sendable (String) async -> Bool
        /// Accept friends' sessions (off: refuse them).
        public var acceptsSessions: Bool
        /// Seconds an outage may last before the session ends as failed.
        public var recoveryWindow: Double
        /// DCEP protocols of data channels that are not the session's own but
        /// an application's (the friend file protocol): the peer's channels
        /// with one of them come out of `applicationChannels`; others are closed.
        public var applicationProtocols: Set<String> = []
        /// Sessions under way at most; a friend's past it is refused as busy.
        public var maxSessions = 32
        /// Sessions under way with one peer at most.
        public var maxSessionsPerPeer = 4

        /// Sessions accepted from anyone `mayConnect` allows (everyone by default: the Carrier provider allows friends only).
        public init(
            peer: PeerConfiguration = PeerConfiguration(), acceptsSessions: Bool = true, recoveryWindow: Double = 30,
            mayConnect: @escaping @Sendable (String) async -> Bool = { _ in true }
        ) {
            self.peer = peer
            self.acceptsSessions = acceptsSessions
            self.recoveryWindow = recoveryWindow
            self.mayConnect = mayConnect
        }
    }

    /// The TCP services offered to friends' port-forwarding streams.
    public nonisolated let services = ServiceRegistry()
    /// Sessions friends opened, once connected.
    public nonisolated let incomingSessions: AsyncStream<Session>
    private let incomingSink: AsyncStream<Session>.Continuation
    /// Data channels friends opened with one of `Configuration.applicationProtocols`.
    public nonisolated let applicationChannels: AsyncStream<ApplicationChannel>
    private let applicationSink: AsyncStream<ApplicationChannel>.Continuation
    private let client: CallClient
    private let configuration: Configuration
    private var sessions: [String: Session] = [:]
    /// The last state of every live negotiation, for a session registered after its first events.
    private var calls: [String: Call] = [:]
    private var pump: Task<Void, Never>?
    /// Sessions `session(with:)` is opening, by peer, with how many wait for each.
    private var opening: [String: (task: Task<Result<Session, SessionError>, Never>, waiters: Int)] = [:]

    /// A manager over any signaling provider; `start()` it before use.
    public init(provider: any SignalingProvider, configuration: Configuration = Configuration()) {
        var calls = CallClient.Configuration(
            peer: configuration.peer, confirmRinging: false, mayCall: configuration.mayConnect)
        calls.alwaysAudio = false
        calls.maxCalls = configuration.maxSessions
        calls.maxCallsPerPeer = configuration.maxSessionsPerPeer
        calls.timeouts.recoveryWindow = configuration.recoveryWindow
        client = CallClient(provider: provider, configuration: calls)
        self.configuration = configuration
        (incomingSessions, incomingSink) = AsyncStream<Session>.makeStream(bufferingPolicy: .bufferingNewest(64))
        (applicationChannels, applicationSink) = AsyncStream<ApplicationChannel>.makeStream(
            bufferingPolicy: .bufferingNewest(64))
    }

    /// Starts listening for friends' sessions; call once.
    public func start() async {
        guard pump == nil else { return }
        let events = await client.events()
        await client.start()
        pump = Task { [weak self] in
            for await event in events { await self?.handle(event) }
        }
    }

    /// Ends every session and stops listening.
    public func stop() async {
        await client.stop()
        pump?.cancel()
        pump = nil
        incomingSink.finish()
        applicationSink.finish()
    }

    /// Opens a session to a friend; returns once it is connected.
    public func openSession(to peer: String) async throws(SessionError) -> Session {
        let call: Call
        do { call = try await client.makeCall(to: peer, options: [.data]) } catch let error as CallError {
            if case .notAFriend = error { throw .notAFriend(peer) }
            throw .notConnected(error.description)
        } catch {
            throw .notConnected("\(error)")
        }
        let session = register(call)
        // Cancelled (nobody waits any more): the call is hung up, which ends the wait.
        let client = self.client
        let waited = await withTaskCancellationHandler {
            do throws(SessionError) {
                try await session.waitConnected()
                return Result<Session, SessionError>.success(session)
            } catch {
                return .failure(error)
            }
        } onCancel: {
            Task { try? await client.endCall(call.id) }
        }
        return try waited.get()
    }

    /// The sessions open now, both ways.
    public var activeSessions: [Session] { Array(sessions.values) }

    /// A session with `peer` that is connected or recovering, either way
    /// round (several users of one friend share it), or a new one.
    public func session(with peer: String) async throws(SessionError) -> Session {
        for session in sessions.values where session.peer == peer {
            let state = await session.state
            if state == .connected || state == .disconnected { return session }
        }
        // Users asking at once share the one being opened.
        let opening: Task<Result<Session, SessionError>, Never>
        if let shared = self.opening[peer] {
            opening = shared.task
            self.opening[peer]?.waiters += 1
        } else {
            opening = Task { () async -> Result<Session, SessionError> in
                do throws(SessionError) { return .success(try await self.openSession(to: peer)) } catch {
                    return .failure(error)
                }
            }
            self.opening[peer] = (opening, 1)
        }
        let result = await withTaskCancellationHandler {
            await opening.value
        } onCancel: {
            Task { await self.gaveUp(on: opening, to: peer) }
        }
        if self.opening[peer]?.task == opening { self.opening[peer] = nil }
        return try result.get()
    }

    /// A user of `session(with:)` was cancelled (it gave up at its deadline):
    /// the last one to go stops the opening, so that a call the peer never
    /// answers does not ring on, and the next ask invites afresh (a friend's
    /// node that takes sessions now answers that one).
    private func gaveUp(on opening: Task<Result<Session, SessionError>, Never>, to peer: String) {
        guard let shared = self.opening[peer], shared.task == opening else { return }
        guard shared.waiters <= 1 else {
            self.opening[peer]?.waiters -= 1
            return
        }
        self.opening[peer] = nil
        opening.cancel()
    }

    private func register(_ call: Call) -> Session {
        let session = Session(id: call.id, peer: call.peer, client: client, services: services)
        sessions[call.id] = session
        if let known = calls[call.id] { Task { await session.callChanged(known) } }
        return session
    }

    private func handle(_ event: CallEvent) async {
        switch event {
        case .incoming(let call):
            guard configuration.acceptsSessions, call.options == [.data] else {
                try? await client.reject(call.id)  // an unknown or ended call needs no answer
                return
            }
            _ = register(call)
            try? await client.accept(call.id)  // a call ended meanwhile ends its session through `.ended`
        case .stateChanged(let call):
            calls[call.id] = call
            guard let session = sessions[call.id] else { return }
            let wasConnecting = await session.state == .connecting
            await session.callChanged(call)
            if wasConnecting, call.state == .connected, call.direction == .incoming { incomingSink.yield(session) }
        case .ended(let call):
            calls[call.id] = nil
            await sessions.removeValue(forKey: call.id)?.callChanged(call)
        case .dataChannel(let callId, let channel):
            guard let session = sessions[callId] else { return channel.close() }
            if configuration.applicationProtocols.contains(channel.parameters.protocol) {
                applicationSink.yield(ApplicationChannel(session: session, channel: channel))
            } else {
                await session.peerOpened(channel)
            }
        case .badSignal, .fileProgress, .fileReceived, .message:
            break
        }
    }
}

/// A data channel a friend opened in a session for an application protocol
/// (`SessionManager.Configuration.applicationProtocols`).
public struct ApplicationChannel: Sendable {
    /// The session it belongs to (its `peer` is the friend).
    public let session: Session
    /// The channel, open or opening; its `parameters.protocol` says what it carries.
    public let channel: DataChannel
}
