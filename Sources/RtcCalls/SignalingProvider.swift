import Foundation
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

/// Providers joined in memory: what one sends to a peer id, that peer's
/// provider receives, in order. For tests (and bots in one process).
public final class InMemorySignaling: SignalingProvider, @unchecked Sendable {
    /// This side's peer id.
    public let id: String
    private let continuation: AsyncStream<SignalingInput>.Continuation
    private let stream: AsyncStream<SignalingInput>
    private let switchboard: Switchboard
    private let lock = NSLock()
    private var dropping = false
    private var log: [RtcSignal] = []
    private var rewriting: (@Sendable (RtcSignal) -> RtcSignal)?

    /// Providers that can all reach each other, by id.
    public static func network(_ ids: [String]) -> [String: InMemorySignaling] {
        let switchboard = Switchboard()
        var providers: [String: InMemorySignaling] = [:]
        for id in ids {
            let provider = InMemorySignaling(id: id, switchboard: switchboard)
            switchboard.add(provider)
            providers[id] = provider
        }
        return providers
    }

    /// Two providers that reach each other.
    public static func pair(_ a: String, _ b: String) -> (InMemorySignaling, InMemorySignaling) {
        let providers = network([a, b])
        return (providers[a]!, providers[b]!)  // both were just made
    }

    private init(id: String, switchboard: Switchboard) {
        self.id = id
        self.switchboard = switchboard
        (stream, continuation) = AsyncStream<SignalingInput>.makeStream()
    }

    /// Set to drop what this side sends (a peer that went away).
    public var dropOutgoing: Bool {
        get { lock.withLock { dropping } }
        set { lock.withLock { dropping = newValue } }
    }

    /// Applied to every signal this side sends, for tests that put a network
    /// between the peers (a `UdpRelay` rewrites the candidates).
    public var rewriteOutgoing: (@Sendable (RtcSignal) -> RtcSignal)? {
        get { lock.withLock { rewriting } }
        set { lock.withLock { rewriting = newValue } }
    }

    /// The signals `sent` keeps (the last ones): a process that runs for long must not keep them all.
    public static let logLimit = 1000

    /// The signals sent (the last `logLimit`), for tests to look at.
    public var sent: [RtcSignal] { lock.withLock { log } }

    /// Delivers to the peer's provider at once (or drops, or rewrites, as set).
    public func send(_ signal: RtcSignal, to peer: String) async throws(SignalError) {
        let (drop, rewrite) = lock.withLock {
            log.append(signal)
            if log.count > Self.logLimit { log.removeFirst(log.count - Self.logLimit) }
            return (dropping, rewriting)
        }
        guard !drop else { return }
        let signal = rewrite?(signal) ?? signal
        guard let other = switchboard.provider(peer) else { throw .notDelivered("no peer \(peer)") }
        other.deliver(.signal(signal, from: id))
    }

    /// Injects an input as if it came from the network (stray or raw signals in tests).
    public func deliver(_ input: SignalingInput) { continuation.yield(input) }

    /// What the other providers sent this one.
    public func inputs() async -> AsyncStream<SignalingInput> { stream }

    /// None.
    public func iceServers() async -> [PeerConfiguration.IceServer] { [] }

    private final class Switchboard: @unchecked Sendable {
        private let lock = NSLock()
        private var providers: [String: Weak] = [:]

        struct Weak { weak var provider: InMemorySignaling? }

        func add(_ provider: InMemorySignaling) { lock.withLock { providers[provider.id] = Weak(provider: provider) } }
        func provider(_ id: String) -> InMemorySignaling? { lock.withLock { providers[id]?.provider } }
    }
}
