import RtcPeer

/// What a signaling provider delivers: a signal from a peer, or bytes from a
/// peer that are not a signal (reported, never fatal), or word that a signal
/// we sent did not reach the peer.
public enum SignalingInput: Sendable, Equatable {
    case signal(RtcSignal, from: String)
    case undecodable(SignalError, from: String)
    case undelivered(RtcSignal, to: String, reason: String)
}

/// Carries call signals between peers. The call layer knows only this
/// protocol: the Carrier provider (signals as invites to `friend:carrier`),
/// standard input/output (`carrier rtc`), and an in-memory pair for tests.
public protocol SignalingProvider: Sendable {
    /// Hands a signal to the transport; signals to one peer leave in the order
    /// of these calls. A later delivery failure arrives as `.undelivered`.
    func send(_ signal: RtcSignal, to peer: String) async throws(SignalError)
    /// What arrives. One stream, for one consumer (the call client).
    func inputs() async -> AsyncStream<SignalingInput>
    /// ICE servers the provider offers (Carrier's TURN), maybe none.
    func iceServers() async -> [PeerConfiguration.IceServer]
}

/// Two providers joined in memory: what one sends, the other receives, in
/// order. Peers are named by the ids given at creation. For tests.
public final class InMemorySignaling: SignalingProvider, @unchecked Sendable {
    public let id: String
    private let continuation: AsyncStream<SignalingInput>.Continuation
    private let stream: AsyncStream<SignalingInput>
    private weak var other: InMemorySignaling?
    /// Set to drop what this side sends (a peer that went away).
    public nonisolated(unsafe) var dropOutgoing = false
    /// Every signal sent, for tests to look at.
    public private(set) nonisolated(unsafe) var sent: [RtcSignal] = []

    public static func pair(_ a: String, _ b: String) -> (InMemorySignaling, InMemorySignaling) {
        let first = InMemorySignaling(id: a)
        let second = InMemorySignaling(id: b)
        first.other = second
        second.other = first
        return (first, second)
    }

    private init(id: String) {
        self.id = id
        (stream, continuation) = AsyncStream<SignalingInput>.makeStream()
    }

    public func send(_ signal: RtcSignal, to peer: String) async throws(SignalError) {
        sent.append(signal)
        guard !dropOutgoing else { return }
        guard let other, other.id == peer else { throw .notDelivered("no peer \(peer)") }
        other.deliver(.signal(signal, from: id))
    }

    /// Injects an input as if it came from the network (stray or raw signals in tests).
    public func deliver(_ input: SignalingInput) { continuation.yield(input) }

    public func inputs() async -> AsyncStream<SignalingInput> { stream }

    public func iceServers() async -> [PeerConfiguration.IceServer] { [] }
}
