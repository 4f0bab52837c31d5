import CNice
import CShimGLib
import Foundation

/// Full ICE (RFC 8445) on libnice for one RTCP-muxed component: gathering
/// (host, STUN, TURN over UDP/TCP/TLS), trickle in both directions,
/// connectivity checks, consent freshness (RFC 7675) and ICE restart.
///
/// Thread safety: libnice locks its agent, so every method may be called from
/// any thread. Received packets are delivered on the agent's own GLib thread
/// (`onPacket`), and so are most events (`onEvent`); but libnice emits some
/// events on the thread that called into it (a state change while a remote
/// candidate is added, gathering starts or a failed stream is parked), so a
/// handler must not assume the GLib thread. Handlers may call the agent
/// again; they must be quick and must not block.
public final class IceAgent: @unchecked Sendable {
    /// How this agent gathers and checks, as it was made.
    public let configuration: IceConfiguration
    private let loop: GLibLoopThread
    let agent: OpaquePointer
    let streamId: UInt32
    private let callbacks: Callbacks
    private var signalIds: [UInt] = []
    /// One per TURN server, for the agent's life: what libnice talks to instead of the server.
    private var bridges: [TurnBridge] = []
    /// Recursive: libnice emits some of its signals on the thread that called
    /// it (a state change inside `nice_agent_set_remote_candidates`,
    /// `gather_candidates` or `restart_stream`), so a handler may run inside
    /// one of our calls that holds this lock, and call us again (the DTLS layer
    /// sends its held flight when ICE connects). With a plain lock that thread
    /// waited for itself, and the GLib thread behind it: the process hung.
    private let lock = NSRecursiveLock()
    private var closed = false

    /// What the GLib thread calls into; retained by the agent.
    final class Callbacks: @unchecked Sendable {
        let onEvent: @Sendable (IceEvent) -> Void
        let onPacket: @Sendable ([UInt8]) -> Void
        init(onEvent: @escaping @Sendable (IceEvent) -> Void, onPacket: @escaping @Sendable ([UInt8]) -> Void) {
            self.onEvent = onEvent
            self.onPacket = onPacket
        }
    }

    /// Why the agent could not be set up or could not use a candidate.
    public enum IceError: Error, Sendable, Equatable, CustomStringConvertible {
        case setup(String)
        case badCandidate(String)
        case closed

        /// What went wrong, in words for a log or a user.
        public var description: String {
            switch self {
            case .setup(let why): "ICE setup failed: \(why)"
            case .badCandidate(let line): "ICE: cannot use remote candidate \(line)"
            case .closed: "ICE agent is closed"
            }
        }
    }

    /// An agent with one RTCP-muxed component; `onEvent` and `onPacket` run on its GLib thread.
    public init(
        configuration: IceConfiguration, onEvent: @escaping @Sendable (IceEvent) -> Void,
        onPacket: @escaping @Sendable ([UInt8]) -> Void
    ) throws(IceError) {
        self.configuration = configuration
        callbacks = Callbacks(onEvent: onEvent, onPacket: onPacket)
        loop = GLibLoopThread(name: "carrier-ice")
        // Aggressive nomination (every check of ours carries USE-CANDIDATE):
        // the first pair that works carries the call at once, and a better
        // pair that succeeds later (a direct one, once its NAT holes are open)
        // becomes the selected pair in its place, on both sides. Regular
        // nomination settles on one pair for good.
        var flags = NICE_AGENT_OPTION_ICE_TRICKLE.rawValue
        if configuration.consentFreshness { flags |= NICE_AGENT_OPTION_CONSENT_FRESHNESS.rawValue }
        guard
            let agent = nice_agent_new_full(loop.context, NICE_COMPATIBILITY_RFC5245, NiceAgentOption(rawValue: flags))
        else {
            loop.stop()
            throw .setup("nice_agent_new_full failed")
        }
        self.agent = agent
        let object = UnsafeMutableRawPointer(agent)
        cshim_g_object_set_bool(object, "controlling-mode", configuration.controlling)
        cshim_g_object_set_bool(object, "upnp", false)
        cshim_g_object_set_bool(object, "ice-tcp", configuration.tcpCandidates)
        cshim_g_object_set_bool(object, "force-relay", configuration.relayOnly)
        cshim_g_object_set_uint(object, "stun-pacing-timer", configuration.pacingMilliseconds)
        // Gathering keeps libnice's short schedule; checks get the long one
        // when the peer's credentials or first candidate arrive (`checkSchedule`).
        cshim_g_object_set_uint(object, "stun-max-retransmissions", Self.discoveryRetransmissions)
        if let stun = configuration.stunServer {
            cshim_g_object_set_string(object, "stun-server", stun.host)
            cshim_g_object_set_uint(object, "stun-server-port", UInt32(stun.port))
        }
        for text in configuration.localAddresses {
            var address = NiceAddress()
            nice_address_init(&address)
            guard nice_address_set_from_string(&address, text) != 0 else {
                g_object_unref(object)
                loop.stop()
                throw .setup("not an IP address: \(text)")
            }
            nice_agent_add_local_address(agent, &address)
        }
        streamId = nice_agent_add_stream(agent, 1)
        guard streamId != 0 else {
            g_object_unref(object)
            loop.stop()
            throw .setup("nice_agent_add_stream failed")
        }
        do {
            try putBridges(object)
        } catch {
            for bridge in bridges { bridge.close() }
            g_object_unref(object)
            loop.stop()
            throw error
        }
        connectSignals()
        let receive: NiceAgentRecvFunc = { _, _, _, length, buffer, user in
            guard let buffer, let user, length > 0 else { return }
            let callbacks = Unmanaged<Callbacks>.fromOpaque(user).takeUnretainedValue()
            callbacks.onPacket(Array(UnsafeRawBufferPointer(start: buffer, count: Int(length))))
        }
        nice_agent_attach_recv(
            agent, streamId, 1, loop.context, receive, Unmanaged.passUnretained(callbacks).toOpaque())
    }

    deinit { close() }

    /// Gives libnice each TURN server through a bridge of ours on 127.0.0.1
    /// (`TurnBridge`), and, when no STUN server is set, the first TURN server
    /// over UDP as one: libnice takes no server-reflexive address from a TURN
    /// server it reaches over TCP, and a TURN server answers STUN.
    private func putBridges(_ object: UnsafeMutableRawPointer) throws(IceError) {
        let callbacks = callbacks
        for turn in configuration.turnServers {
            let name = "\(turn.host):\(turn.port)"
            let upstream: TurnBridge.Upstream =
                switch turn.transport {
                case .udp: .udp
                case .tcp: .tcp
                case .tls: .tls
                }
            let bridge: TurnBridge
            do {
                bridge = try TurnBridge(host: turn.host, port: turn.port, upstream: upstream) { [weak self] _ in
                    callbacks.onEvent(.relayLost(server: name))
                    self?.relayLost()
                }
            } catch {
                throw .setup(error.description)
            }
            bridges.append(bridge)
            guard setRelay(bridge, turn) else { throw .setup("TURN server \(name) refused by libnice") }
        }
        if configuration.stunServer == nil, !configuration.relayOnly,
            let first = configuration.turnServers.first(where: { $0.transport == .udp })
        {
            cshim_g_object_set_string(object, "stun-server", first.host)
            cshim_g_object_set_uint(object, "stun-server-port", UInt32(first.port))
        }
    }

    private func setRelay(_ bridge: TurnBridge, _ turn: IceConfiguration.TurnServer) -> Bool {
        nice_agent_set_relay_info(
            agent, streamId, 1, "127.0.0.1", UInt32(bridge.port), turn.username, turn.password,
            NICE_RELAY_TYPE_TURN_TCP) != 0
    }

    /// A TURN server dropped an allocation of ours. When the pair in use is
    /// relayed it may be through that server (at our end or the peer's, who
    /// uses the same servers as a rule): the checks start afresh at once
    /// (`park`), so that a pair through another server, or a direct one,
    /// takes over within a few checks instead of after consent freshness
    /// gives up (30 s). A direct pair in use is left alone.
    private func relayLost() {
        let relayed = whileOpen(false) {
            var local: UnsafeMutablePointer<NiceCandidate>?
            var remote: UnsafeMutablePointer<NiceCandidate>?
            guard nice_agent_get_selected_pair(agent, streamId, 1, &local, &remote) != 0, let local, let remote
            else { return false }
            return local.pointee.type == NICE_CANDIDATE_TYPE_RELAYED
                || remote.pointee.type == NICE_CANDIDATE_TYPE_RELAYED
        }
        if relayed { park() }
    }

    /// Runs `body` unless the agent is closed; libnice must not see a freed agent.
    func whileOpen<T>(_ fallback: T, _ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return closed ? fallback : body()
    }

    /// Sets the ICE role (the offerer controls); call before checks start.
    public func setControlling(_ controlling: Bool) {
        whileOpen(()) { cshim_g_object_set_bool(UnsafeMutableRawPointer(agent), "controlling-mode", controlling) }
    }

    /// Starts gathering; candidates arrive as `.localCandidate` events.
    public func gather() throws(IceError) {
        let started = whileOpen(false) { nice_agent_gather_candidates(agent, streamId) != 0 }
        guard started else { throw .setup("gathering failed to start") }
    }

    /// Our ICE username fragment and password, for `a=ice-ufrag` and `a=ice-pwd`.
    public var localCredentials: (ufrag: String, pwd: String) {
        whileOpen(("", "")) { credentials() }
    }

    private func credentials() -> (ufrag: String, pwd: String) {
        var ufrag: UnsafeMutablePointer<CChar>?
        var pwd: UnsafeMutablePointer<CChar>?
        nice_agent_get_local_credentials(agent, streamId, &ufrag, &pwd)
        defer {
            g_free(ufrag)
            g_free(pwd)
        }
        return (ufrag.map { String(cString: $0) } ?? "", pwd.map { String(cString: $0) } ?? "")
    }

    /// The peer's `a=ice-ufrag` and `a=ice-pwd`; set before its candidates are checked.
    public func setRemoteCredentials(ufrag: String, pwd: String) {
        lock.withLock { remoteCredentials = (ufrag, pwd) }
        whileOpen(()) {
            useCheckSchedule()
            _ = nice_agent_set_remote_credentials(agent, streamId, ufrag, pwd)
        }
    }

    /// Retransmissions of a STUN or TURN request while gathering: libnice's
    /// default, sent at 0, 0.5 and 1.5 s and given up at 2 s, so a server that
    /// does not answer holds gathering (and a peer that waits for all the
    /// candidates) for 2 s at most.
    static let discoveryRetransmissions: UInt32 = 3

    /// From the first remote credentials or candidate on, every new check (and
    /// TURN refresh) gets `IceConfiguration.checkRetransmissions`; requests
    /// already under way keep theirs (libnice copies the count when it sends).
    /// Called with the agent open, under `lock`.
    private func useCheckSchedule() {
        guard !checkScheduleSet else { return }
        checkScheduleSet = true
        cshim_g_object_set_uint(
            UnsafeMutableRawPointer(agent), "stun-max-retransmissions", configuration.checkRetransmissions)
    }

    /// Guarded by `lock`: whether checks have their long schedule yet.
    private var checkScheduleSet = false

    /// Adds a remote candidate from its SDP attribute (`candidate:...`, with or without `a=`).
    /// Candidates for other components or transports libnice cannot use are refused.
    public func addRemoteCandidate(_ line: String) throws(IceError) {
        let text = line.hasPrefix("a=") ? line : "a=" + line
        let added = whileOpen(false) {
            useCheckSchedule()
            guard setRemoteCandidate(text) else { return false }
            if remoteCandidates.count < Self.maxRemembered { remoteCandidates.append(text) }
            return true
        }
        guard added else { throw .badCandidate(line) }
    }

    /// Hands one `a=candidate:` line to libnice; true unless it could not be
    /// used. Called with the agent open, under `lock`.
    private func setRemoteCandidate(_ text: String) -> Bool {
        guard let candidate = nice_agent_parse_remote_candidate_sdp(agent, streamId, text) else { return false }
        defer { nice_candidate_free(candidate) }
        guard candidate.pointee.component_id == 1 else { return true }  // RTCP-mux: only component 1
        let list = g_slist_append(nil, candidate)
        defer { g_slist_free(list) }
        return nice_agent_set_remote_candidates(agent, streamId, 1, list) >= 0
    }

    /// The peer sent `a=end-of-candidates`: no more remote candidates will come.
    public func remoteCandidatesComplete() {
        whileOpen(()) {
            remoteGatheringDone = true
            _ = nice_agent_peer_candidate_gathering_done(agent, streamId)
        }
    }

    /// Guarded by `lock`: the peer's candidates in this ICE generation, and
    /// whether it said it has no more, for `park`. The peer connection
    /// bounds what reaches here (`PeerConnection.maxRemoteCandidates`).
    private var remoteCandidates: [String] = []
    private var remoteGatheringDone = false
    private static let maxRemembered = 1024

    /// Sends one datagram on the selected pair; false if there is none yet.
    @discardableResult
    public func send(_ datagram: [UInt8]) -> Bool {
        whileOpen(false) {
            datagram.withUnsafeBytes { buffer in
                nice_agent_send(
                    agent, streamId, 1, UInt32(buffer.count), buffer.baseAddress?.assumingMemoryBound(to: CChar.self))
                    == Int32(buffer.count)
            }
        }
    }

    /// ICE restart (RFC 8445 §9): new local credentials, candidates gathered again.
    public func restart() throws(IceError) {
        lock.withLock {
            remoteCredentials = nil
            remoteCandidates = []
            remoteGatheringDone = false
        }
        setPacing(configuration.pacingMilliseconds)  // checks at full pace again
        guard whileOpen(false, { nice_agent_restart_stream(agent, streamId) != 0 }) else {
            throw .setup("restart failed")
        }
    }

    /// How we reach the TURN server that gave the relayed address
    /// `address:port` (`udp`, `tcp` or `tls`); nil for an address no server gave.
    public func turnTransport(relaying address: String) -> String? {
        bridges.first { $0.relays(address) }.map { "\($0.upstream)" }
    }

    /// The selected pair as candidate lines, once connected.
    public var selectedPair: (local: String, remote: String)? {
        whileOpen(nil) { pair() }
    }

    /// Whether the selected pair runs within this machine, so that no
    /// network link (and no link MTU) lies between the two processes
    /// (`isLocalPath`). A relay process on loopback may still be in the way:
    /// a caller that wants large datagrams probes the path first.
    public var selectedPathIsLocal: Bool {
        whileOpen(false) {
            var local: UnsafeMutablePointer<NiceCandidate>?
            var remote: UnsafeMutablePointer<NiceCandidate>?
            guard nice_agent_get_selected_pair(agent, streamId, 1, &local, &remote) != 0, let local, let remote else {
                return false
            }
            return Self.isLocalPath(
                local: Self.ipAddress(&local.pointee.addr), localIsHost: local.pointee.type == NICE_CANDIDATE_TYPE_HOST,
                remote: Self.ipAddress(&remote.pointee.addr))
        }
    }

    /// A path inside one machine: both ends on loopback (the local end may be
    /// a TURN relay's address on loopback too), or a host candidate of ours
    /// facing its own IP address (Linux delivers packets for the machine's own
    /// addresses through the loopback interface). Two containers on one
    /// machine have addresses of their own and a bridge between them: not local.
    static func isLocalPath(local: String, localIsHost: Bool, remote: String) -> Bool {
        func isLoopback(_ ip: String) -> Bool { ip.hasPrefix("127.") || ip == "::1" }
        if isLoopback(local) && isLoopback(remote) { return true }
        return localIsHost && !local.isEmpty && local == remote
    }

    private static func ipAddress(_ address: UnsafePointer<NiceAddress>) -> String {
        var text = [CChar](repeating: 0, count: 64)
        nice_address_to_string(address, &text)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private func pair() -> (local: String, remote: String)? {
        var local: UnsafeMutablePointer<NiceCandidate>?
        var remote: UnsafeMutablePointer<NiceCandidate>?
        guard nice_agent_get_selected_pair(agent, streamId, 1, &local, &remote) != 0, let local, let remote else {
            return nil
        }
        return (describe(local), describe(remote))
    }

    /// Stops the GLib thread and frees libnice. No event follows.
    public func close() {
        lock.lock()
        let alreadyClosed = closed
        closed = true
        lock.unlock()
        guard !alreadyClosed else { return }
        loop.stop()
        for bridge in bridges { bridge.close() }
        nice_agent_attach_recv(agent, streamId, 1, nil, nil, nil)
        for id in signalIds { g_signal_handler_disconnect(UnsafeMutableRawPointer(agent), gulong(id)) }
        g_object_unref(UnsafeMutableRawPointer(agent))
    }

    func describe(_ candidate: UnsafeMutablePointer<NiceCandidate>) -> String {
        guard let text = nice_agent_generate_local_candidate_sdp(agent, candidate) else { return "" }
        defer { g_free(text) }
        let line = String(cString: text)
        return line.hasPrefix("a=") ? String(line.dropFirst(2)) : line
    }

    /// Milliseconds between libnice's check ticks once checks are done.
    /// libnice keeps its check timer running at the pacing interval for the
    /// life of the agent: at the 1 ms that makes connecting fast, that was a
    /// thousand wake-ups a second of the GLib thread during a whole call
    /// (measured: 4,900 polls in a 5 s call, 1,100 at 20 ms, a fifth less CPU
    /// for a media receiver). 20 ms is libnice's own default; late trickled
    /// candidates are still checked, at that pace.
    static let idlePacing: UInt32 = 20

    /// Guarded by `lock`: the peer's credentials in this ICE generation, for `park`.
    private var remoteCredentials: (ufrag: String, pwd: String)?

    /// On the thread that emitted libnice's signal (the GLib thread, for a failure).
    private func stateChanged(_ state: IceState) {
        if state == .completed { setPacing(max(configuration.pacingMilliseconds, Self.idlePacing)) }
        defer { if state == .failed { park() } }
        callbacks.onEvent(.stateChanged(state))
    }

    /// Takes a failed component out of libnice's FAILED state at once, before
    /// the GLib thread handles another packet, and keeps checking.
    ///
    /// libnice 0.1.21 aborts the whole process (a `g_assert` in
    /// `agent_signal_component_state_change`, agent.c:2626) when a check of
    /// ours is answered with success after it declared the component FAILED:
    /// the answer asks for FAILED → CONNECTED, a step its own table forbids
    /// (traced with a backtrace to `priv_map_reply_to_conn_check_request`).
    /// Seen about once in four runs of the peer and call tests, on agents whose
    /// fresh ICE generation failed at once while both sides restarted, with
    /// checks still in flight or triggered again by the peer; consent lost
    /// on the selected pair leaves FAILED with its checks alive the same way.
    ///
    /// So the stream restarts (GATHERING, a step allowed from any state; every
    /// pair is dropped, so no late answer can match one), gets the same local
    /// and remote credentials back, and then every remote candidate of this
    /// generation again (GATHERING → CONNECTING, allowed): fresh pairs with a
    /// fresh check schedule, so a peer that comes back (an outage over, a NAT
    /// that opened late) is found by our checks as well as by its own. The
    /// peer sees nothing change. The failure has been reported first; an ICE
    /// restart over signaling (`restart`, new credentials) replaces all of it.
    private func park() {
        whileOpen(()) {
            let local = credentials()
            let remote = remoteCredentials
            guard nice_agent_restart_stream(agent, streamId) != 0 else { return }
            _ = nice_agent_set_local_credentials(agent, streamId, local.ufrag, local.pwd)
            guard let remote else { return }
            _ = nice_agent_set_remote_credentials(agent, streamId, remote.ufrag, remote.pwd)
            for text in remoteCandidates { _ = setRemoteCandidate(text) }
            if remoteGatheringDone { _ = nice_agent_peer_candidate_gathering_done(agent, streamId) }
        }
    }

    /// libnice's current check pacing, for tests.
    var pacing: UInt32 {
        whileOpen(0) { cshim_g_object_get_uint(UnsafeMutableRawPointer(agent), "stun-pacing-timer") }
    }

    private func setPacing(_ milliseconds: UInt32) {
        whileOpen(()) { cshim_g_object_set_uint(UnsafeMutableRawPointer(agent), "stun-pacing-timer", milliseconds) }
    }

    private func connectSignals() {
        let user = Unmanaged.passUnretained(self).toOpaque()
        let newCandidate:
            @convention(c) (OpaquePointer?, UnsafeMutablePointer<NiceCandidate>?, UnsafeMutableRawPointer?) -> Void = {
                _, candidate, user in
                guard let candidate, let user else { return }
                let agent = Unmanaged<IceAgent>.fromOpaque(user).takeUnretainedValue()
                guard candidate.pointee.component_id == 1 else { return }
                agent.callbacks.onEvent(.localCandidate(agent.describe(candidate)))
            }
        let gatheringDone: @convention(c) (OpaquePointer?, UInt32, UnsafeMutableRawPointer?) -> Void = { _, _, user in
            guard let user else { return }
            Unmanaged<IceAgent>.fromOpaque(user).takeUnretainedValue().callbacks.onEvent(.gatheringComplete)
        }
        let stateChanged: @convention(c) (OpaquePointer?, UInt32, UInt32, UInt32, UnsafeMutableRawPointer?) -> Void = {
            _, _, component, state, user in
            guard let user, component == 1 else { return }
            let mapped: IceState =
                switch NiceComponentState(rawValue: state) {
                case NICE_COMPONENT_STATE_GATHERING: .gathering
                case NICE_COMPONENT_STATE_CONNECTING: .checking
                case NICE_COMPONENT_STATE_CONNECTED: .connected
                case NICE_COMPONENT_STATE_READY: .completed
                case NICE_COMPONENT_STATE_FAILED: .failed
                case NICE_COMPONENT_STATE_DISCONNECTED: .disconnected
                default: .new
                }
            Unmanaged<IceAgent>.fromOpaque(user).takeUnretainedValue().stateChanged(mapped)
        }
        let selected:
            @convention(c) (
                OpaquePointer?, UInt32, UInt32, UnsafeMutablePointer<NiceCandidate>?,
                UnsafeMutablePointer<NiceCandidate>?,
                UnsafeMutableRawPointer?
            ) -> Void = { _, _, component, local, remote, user in
                guard let user, let local, let remote, component == 1 else { return }
                let agent = Unmanaged<IceAgent>.fromOpaque(user).takeUnretainedValue()
                agent.enlargeSelectedSocketBuffers()
                agent.callbacks.onEvent(.selectedPair(local: agent.describe(local), remote: agent.describe(remote)))
            }
        signalIds = [
            connect("new-candidate-full", unsafeBitCast(newCandidate, to: GCallback.self), user),
            connect("candidate-gathering-done", unsafeBitCast(gatheringDone, to: GCallback.self), user),
            connect("component-state-changed", unsafeBitCast(stateChanged, to: GCallback.self), user),
            connect("new-selected-pair-full", unsafeBitCast(selected, to: GCallback.self), user),
        ]
    }

    private func connect(_ signal: String, _ handler: GCallback, _ user: UnsafeMutableRawPointer) -> UInt {
        UInt(
            g_signal_connect_data(
                UnsafeMutableRawPointer(agent), signal, handler, user, nil, GConnectFlags(rawValue: 0)))
    }
}
