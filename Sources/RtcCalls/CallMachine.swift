/// One call's protocol as a state machine (in the spirit of ToxAV's msi.c):
/// inputs are remote signals, local decisions, transport states and the time;
/// outputs are what the call session must do. No sockets, no clocks: every
/// transition is tested by feeding inputs (Tests/RtcCallsTests).
///
/// Outgoing: offer → [event ringing] → answer (+ action accept) → connecting → connected.
/// Incoming: offer → the application decides → answer + action accept, or bye declined/busy.
/// Either side: bye ends the call; an offer for the same call is a renegotiation
/// (offers that cross are settled by `PerfectNegotiation`: the callee is polite).
/// A connected call whose transport is lost restarts ICE until it is back or
/// the recovery window has passed (`ConnectionRecovery`).
public struct CallMachine: Sendable {
    /// How long a call waits at each stage.
    public struct Timeouts: Sendable, Equatable {
        /// Outgoing: no answer within this ends the call (noAnswer). Incoming: no decision
        /// within it (and 2 s more, so that the caller's timeout decides) ends it too.
        public var ringing: Double = 45
        /// A call still connecting whose transport fails ends after this (failed).
        public var disconnectGrace: Double = 3
        /// A connected call whose transport is lost restarts ICE for up to this
        /// long (seconds) before it ends as failed.
        public var recoveryWindow: Double = 30

        /// Timeouts in seconds.
        public init(ringing: Double = 45, disconnectGrace: Double = 3, recoveryWindow: Double = 30) {
            self.ringing = ringing
            self.disconnectGrace = disconnectGrace
            self.recoveryWindow = recoveryWindow
        }
    }

    /// What can happen to a call: a signal, the application's decision, the transport, time.
    public enum Input: Sendable, Equatable {
        case remote(RtcSignal)
        case accept
        case reject
        case busy
        case hangUp
        case transportConnected
        case transportDisconnected
        case transportFailed
        /// The peer closed the transport (DTLS close_notify): it hung up. Its bye,
        /// which travels the signaling path, may come a moment later with a reason.
        case transportClosed
        /// A signal could not be delivered to the peer.
        case undeliverable
        /// Both sides called each other at once and the other call goes on (a bye busy is sent).
        case lostGlare
        /// We offer again on a call under way (a new section, or an ICE restart).
        case renegotiate(iceRestart: Bool)
        case tick
    }

    /// What the session must do, in order.
    public enum Output: Sendable, Equatable {
        /// Create the offer, set it locally, send it (with callId and options).
        case sendOffer
        /// Apply the peer's offer, create and send the answer, then `action: accept`.
        case answer(offer: String)
        case applyAnswer(String)
        /// An offer for a call in progress: apply it and answer, no accept.
        case renegotiate(offer: String)
        /// Create a new offer on the call under way and send it.
        case reoffer(iceRestart: Bool)
        /// Drop our pending offer: the peer's crossed it and we are the polite side.
        case rollback
        case addCandidates([RtcSignal.Candidate])
        /// Send a signal (bye, event, action); the session adds the callId.
        case send(RtcSignal)
        /// The application must decide: accept, reject or busy.
        case askApplication
        case startMedia
        /// Release the transport and media.
        case close
        case stateChanged(Call.State)
    }

    /// Outgoing or incoming.
    public let direction: Call.Direction
    /// The timeouts it runs with.
    public let timeouts: Timeouts
    /// Where the call is.
    public private(set) var state: Call.State = .ringing
    /// Why it ended, once it has.
    public private(set) var endReason: Call.EndReason?
    /// Why it ended, when the machine knows more than the reason (a recovery that gave up).
    public private(set) var endDetail: String?
    private var pendingOffer: String?
    private var remoteDescriptionSet = false
    private var queuedCandidates: [RtcSignal.Candidate] = []
    private var mediaStarted = false
    /// Offers and answers once the call is under way.
    public private(set) var negotiation: PerfectNegotiation
    /// ICE restarts while the connected call's transport is lost.
    public private(set) var recovery: ConnectionRecovery
    private var ringingDeadline: Double
    private var graceDeadline: Double?
    /// The peer closed the transport: the call ends at this time unless its bye comes first.
    private var peerClosedDeadline: Double?
    /// How long a bye may trail the peer's DTLS close (signals take another path).
    static let byeGrace = 2.0
    private var now: Double

    /// Remote candidates held before the remote description is set (bounded).
    static let maxQueuedCandidates = 64

    /// An outgoing call: its first output sends the offer.
    public static func outgoing(now: Double, timeouts: Timeouts = Timeouts()) -> (CallMachine, [Output]) {
        let machine = CallMachine(direction: .outgoing, now: now, timeouts: timeouts)
        return (machine, [.sendOffer, .stateChanged(.ringing)])
    }

    /// An incoming call from its offer: the application is asked.
    public static func incoming(offer: String, now: Double, timeouts: Timeouts = Timeouts()) -> (CallMachine, [Output])
    {
        var machine = CallMachine(direction: .incoming, now: now, timeouts: timeouts)
        machine.pendingOffer = offer
        return (machine, [.stateChanged(.ringing), .askApplication])
    }

    private init(direction: Call.Direction, now: Double, timeouts: Timeouts) {
        self.direction = direction
        self.timeouts = timeouts
        self.now = now
        negotiation = PerfectNegotiation(polite: direction == .incoming)
        let policy = ConnectionRecovery.Policy(window: timeouts.recoveryWindow)
        recovery = ConnectionRecovery(policy: direction == .incoming ? policy.delayed(by: 1) : policy)
        // The caller's timeout decides; the callee's is a backstop a little later.
        ringingDeadline = now + timeouts.ringing + (direction == .incoming ? 2 : 0)
    }

    /// Whether the call is over.
    public var isEnded: Bool { state == .ended }

    /// One input at `now` (seconds since the call began); what to do about it.
    public mutating func handle(_ input: Input, now: Double) -> [Output] {
        self.now = now
        guard state != .ended else { return [] }
        switch input {
        case .remote(let signal): return remote(signal)
        case .accept:
            guard direction == .incoming, state == .ringing, let offer = pendingOffer else { return [] }
            pendingOffer = nil
            remoteDescriptionSet = true
            var outputs: [Output] = [.answer(offer: offer)]
            outputs += flushCandidates()
            return outputs + move(to: .connecting)
        case .reject:
            guard direction == .incoming, state == .ringing else { return [] }
            return end(.declined, bye: .declined)
        case .busy:
            guard direction == .incoming, state == .ringing else { return [] }
            return end(.busy, bye: .busy)
        case .hangUp:
            return end(.hangUp, bye: .normal)
        case .transportConnected:
            guard state == .connecting || state == .disconnected else { return [] }
            graceDeadline = nil
            recovery.restored(now: now)
            var outputs = move(to: .connected)
            if !mediaStarted {
                mediaStarted = true
                outputs.append(.startMedia)
            }
            return outputs
        case .transportDisconnected, .transportFailed:
            guard peerClosedDeadline == nil else { return [] }  // closed by the peer: nothing to recover
            switch state {
            case .connected:
                return move(to: .disconnected) + recover(recovery.lost(now: now))
            case .disconnected:
                return recover(recovery.lost(now: now))
            case .connecting where input == .transportFailed:
                graceDeadline = graceDeadline ?? now + timeouts.disconnectGrace
                return []
            default:
                return []  // still checking, or not under way
            }
        case .transportClosed:
            guard state != .ringing, state != .remoteRinging else { return [] }
            peerClosedDeadline = peerClosedDeadline ?? now + Self.byeGrace
            return []
        case .undeliverable:
            // While the connection is lost, so may the signaling be: the recovery
            // window decides. Otherwise the peer cannot be reached: nothing more can be said to it.
            guard state != .disconnected else { return [] }
            return end(.error, bye: nil)
        case .lostGlare:
            // A bye (busy, which every peer knows) makes sure the peer forgets this call
            // even if it had taken our offer as an incoming call.
            return end(.glare, bye: .busy)
        case .renegotiate(let iceRestart):
            guard state == .connected || state == .disconnected else { return [] }
            return negotiate(negotiation.wantOffer(iceRestart: iceRestart))
        case .tick:
            if let peerClosedDeadline, now >= peerClosedDeadline { return end(.remoteHangUp, bye: nil) }
            if let graceDeadline, now >= graceDeadline { return end(.failed, bye: .error) }
            if state == .disconnected, peerClosedDeadline == nil, case let actions = recovery.tick(now: now),
                !actions.isEmpty
            {
                return recover(actions)
            }
            if state == .ringing || state == .remoteRinging, now >= ringingDeadline {
                return end(.noAnswer, bye: direction == .outgoing ? .timeout : .busy)
            }
            return []
        }
    }

    private mutating func remote(_ signal: RtcSignal) -> [Output] {
        switch signal.type {
        case .offer:
            // The same call offered again: a renegotiation once it is under way; a duplicate before.
            guard let sdp = signal.sdp, remoteDescriptionSet, state != .ringing else { return [] }
            return negotiate(negotiation.remoteOffer(sdp))
        case .answer, .prAnswer:
            guard signal.type == .answer, let sdp = signal.sdp else { return [] }
            if negotiation.awaitingAnswer { return negotiate(negotiation.remoteAnswer(sdp)) }
            guard direction == .outgoing, state == .ringing || state == .remoteRinging else { return [] }
            remoteDescriptionSet = true
            return [.applyAnswer(sdp)] + flushCandidates() + move(to: .connecting)
        case .candidate:
            let candidates = signal.candidates ?? []  // an empty sdp is end-of-candidates
            guard !candidates.isEmpty else { return [] }
            if remoteDescriptionSet { return [.addCandidates(candidates)] }
            let room = Self.maxQueuedCandidates - queuedCandidates.count
            queuedCandidates += candidates.prefix(max(room, 0))
            return []
        case .removeCandidates:
            return []  // libnice cannot forget a remote candidate; a pair that stops working fails on its own
        case .bye:
            switch signal.reason {
            case .declined: return end(.declined, bye: nil)
            case .busy: return end(.busy, bye: nil)
            default: return end(.remoteHangUp, bye: nil)
            }
        case .action:
            if signal.action == .reject, direction == .outgoing { return end(.declined, bye: nil) }
            return []  // accept: the answer already moved the call on
        case .event:
            if signal.event == .ringing, direction == .outgoing, state == .ringing { return move(to: .remoteRinging) }
            return []
        }
    }

    private func negotiate(_ steps: [PerfectNegotiation.Step]) -> [Output] {
        steps.map { step in
            switch step {
            case .offer(let iceRestart): .reoffer(iceRestart: iceRestart)
            case .rollback: .rollback
            case .answer(let sdp): .renegotiate(offer: sdp)
            case .applyAnswer(let sdp): .applyAnswer(sdp)
            }
        }
    }

    /// Restarts ICE (taking back an offer whose answer has not come), or
    /// ends the call once the recovery window has passed.
    private mutating func recover(_ actions: [ConnectionRecovery.Action]) -> [Output] {
        var outputs: [Output] = []
        for action in actions {
            switch action {
            case .restartIce: outputs += negotiate(negotiation.retry(iceRestart: true))
            case .giveUp(let seconds):
                endDetail =
                    "the connection was lost for \(Int(seconds.rounded())) s and \(recovery.restartsMade) ICE restarts did not bring it back (recovery window \(Int(timeouts.recoveryWindow)) s)"
                return outputs + end(.failed, bye: .error)
            }
        }
        return outputs
    }

    private mutating func flushCandidates() -> [Output] {
        guard !queuedCandidates.isEmpty else { return [] }
        defer { queuedCandidates = [] }
        return [.addCandidates(queuedCandidates)]
    }

    private mutating func move(to new: Call.State) -> [Output] {
        guard new != state else { return [] }
        state = new
        return [.stateChanged(new)]
    }

    private mutating func end(_ reason: Call.EndReason, bye: RtcSignal.Reason?) -> [Output] {
        endReason = reason
        var outputs: [Output] = []
        if let bye { outputs.append(.send(RtcSignal(type: .bye, reason: bye))) }
        outputs.append(.close)
        return outputs + move(to: .ended)
    }
}
