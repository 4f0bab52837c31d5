/// One call's protocol as a state machine (in the spirit of ToxAV's msi.c):
/// inputs are remote signals, local decisions, transport states and the time;
/// outputs are what the call session must do. No sockets, no clocks: every
/// transition is tested by feeding inputs (Tests/RtcCallsTests).
///
/// Outgoing: offer → [event ringing] → answer (+ action accept) → connecting → connected.
/// Incoming: offer → the application decides → answer + action accept, or bye declined/busy.
/// Either side: bye ends the call; an offer for the same call is a renegotiation.
public struct CallMachine: Sendable {
    public struct Timeouts: Sendable, Equatable {
        /// Outgoing: no answer within this ends the call (noAnswer). Incoming: no decision
        /// within it (and 2 s more, so that the caller's timeout decides) ends it too.
        public var ringing: Double = 45
        /// Disconnected (or failed) longer than this ends the call (failed).
        public var disconnectGrace: Double = 3

        public init(ringing: Double = 45, disconnectGrace: Double = 3) {
            self.ringing = ringing
            self.disconnectGrace = disconnectGrace
        }
    }

    public enum Input: Sendable, Equatable {
        case remote(RtcSignal)
        case accept
        case reject
        case busy
        case hangUp
        case transportConnected
        case transportDisconnected
        case transportFailed
        /// A signal could not be delivered to the peer.
        case undeliverable
        /// Both sides called each other at once and the other call goes on (a bye busy is sent).
        case lostGlare
        /// We offer again on a call under way (a new section, or an ICE restart).
        case renegotiate(iceRestart: Bool)
        case tick
    }

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

    public let direction: Call.Direction
    public let timeouts: Timeouts
    public private(set) var state: Call.State = .ringing
    public private(set) var endReason: Call.EndReason?
    private var pendingOffer: String?
    private var remoteDescriptionSet = false
    private var queuedCandidates: [RtcSignal.Candidate] = []
    private var mediaStarted = false
    /// Our renegotiation offer is out; its answer is expected.
    private var awaitingAnswer = false
    private var ringingDeadline: Double
    private var graceDeadline: Double?
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
        // The caller's timeout decides; the callee's is a backstop a little later.
        ringingDeadline = now + timeouts.ringing + (direction == .incoming ? 2 : 0)
    }

    public var isEnded: Bool { state == .ended }

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
            var outputs = move(to: .connected)
            if !mediaStarted {
                mediaStarted = true
                outputs.append(.startMedia)
            }
            return outputs
        case .transportDisconnected, .transportFailed:
            guard state == .connected || state == .connecting else { return [] }
            if state == .connecting, input == .transportDisconnected { return [] }  // still checking
            graceDeadline = graceDeadline ?? now + timeouts.disconnectGrace
            return state == .connected ? move(to: .disconnected) : []
        case .undeliverable:
            // The peer cannot be reached: nothing more can be said to it.
            return end(.error, bye: nil)
        case .lostGlare:
            // A bye (busy, which every peer knows) makes sure the peer forgets this call
            // even if it had taken our offer as an incoming call.
            return end(.glare, bye: .busy)
        case .renegotiate(let iceRestart):
            guard state == .connected || state == .disconnected, !awaitingAnswer else { return [] }
            awaitingAnswer = true
            return [.reoffer(iceRestart: iceRestart)]
        case .tick:
            if let graceDeadline, now >= graceDeadline { return end(.failed, bye: .error) }
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
            // While our own renegotiation offer is out, ours goes first and theirs is dropped.
            guard let sdp = signal.sdp, remoteDescriptionSet, state != .ringing, !awaitingAnswer else { return [] }
            return [.renegotiate(offer: sdp)]
        case .answer, .prAnswer:
            guard signal.type == .answer, let sdp = signal.sdp else { return [] }
            if awaitingAnswer {
                awaitingAnswer = false
                return [.applyAnswer(sdp)]
            }
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
