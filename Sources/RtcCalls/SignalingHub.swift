import Foundation
import RtcPeer

/// One signaling provider shared by several call clients in one process (a
/// daemon that answers calls and places them for the commands it serves):
/// a provider has one input stream for one consumer, and a node has one
/// handler per extension, so the hub takes the provider's inputs and hands
/// each to the tap whose call it is.
///
/// Routing, by the signal's callId (letter case ignored): a callId a tap
/// has sent goes back to that tap; any other (a new incoming call, or a peer
/// that sends no callId) goes to the answering tap if there is one, else to
/// the newest tap that has signaled that peer (so glare between two dials
/// still meets in one client), else it is dropped. A closed tap's callIds
/// are forgotten, so the table holds only the calls of open taps.
public actor SignalingHub {
    /// The provider the hub reads and sends through.
    public let provider: any SignalingProvider
    private var taps: [Int: Tap] = [:]
    private var nextId = 0
    private var answering: Int?
    /// callId (lowercased) → the tap that sent it.
    private var owners: [String: Int] = [:]
    /// peer → the taps that have signaled it, newest last.
    private var peers: [String: [Int]] = [:]
    private var pump: Task<Void, Never>?

    /// A hub over a provider; it starts reading at the first tap.
    public init(_ provider: any SignalingProvider) { self.provider = provider }

    /// A provider for one call client. `answering`: it also takes the calls
    /// nobody here placed (one tap may; a second replaces the first).
    public func tap(answering isAnswering: Bool = false) async -> Tap {
        if pump == nil {
            let inputs = await provider.inputs()
            pump = Task { [weak self] in
                for await input in inputs { await self?.route(input) }
            }
        }
        nextId += 1
        let tap = Tap(id: nextId, hub: self)
        taps[tap.id] = tap
        if isAnswering { answering = tap.id }
        return tap
    }

    /// Stops reading the provider; every tap's stream ends.
    public func stop() {
        pump?.cancel()
        for tap in taps.values { tap.finish() }
        taps.removeAll()
        owners.removeAll()
        peers.removeAll()
    }

    /// How many calls the table holds (for tests: closed taps leave none).
    public var routedCalls: Int { owners.count }

    fileprivate func sent(_ signal: RtcSignal, to peer: String, by id: Int) {
        guard taps[id] != nil, id != answering else { return }
        if let callId = signal.callId?.lowercased() { owners[callId] = id }
        var list = peers[peer, default: []]
        list.removeAll { $0 == id }
        list.append(id)
        peers[peer] = list
    }

    fileprivate func close(_ id: Int) {
        taps.removeValue(forKey: id)?.finish()
        if answering == id { answering = nil }
        owners = owners.filter { $0.value != id }
        for (peer, list) in peers {
            let rest = list.filter { $0 != id }
            peers[peer] = rest.isEmpty ? nil : rest
        }
    }

    private func route(_ input: SignalingInput) {
        let (callId, peer): (String?, String) =
            switch input {
            case .signal(let signal, let from): (signal.callId, from)
            case .undelivered(let signal, let to, _): (signal.callId, to)
            case .undecodable(_, let from): (nil, from)
            }
        let target =
            callId.flatMap { owners[$0.lowercased()] } ?? answering ?? peers[peer]?.last
        guard let target, let tap = taps[target] else { return }
        tap.deliver(input)
    }

    /// A provider that sends through the hub's and receives the inputs of its own calls.
    public final class Tap: SignalingProvider, Sendable {
        let id: Int
        private let hub: SignalingHub
        private let stream: AsyncStream<SignalingInput>
        private let continuation: AsyncStream<SignalingInput>.Continuation

        fileprivate init(id: Int, hub: SignalingHub) {
            self.id = id
            self.hub = hub
            (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
            // A client that stops listening (CallClient.stop) closes its tap.
            continuation.onTermination = { [weak hub] _ in Task { await hub?.close(id) } }
        }

        /// Sends through the hub's provider; replies to this call come back to this tap.
        public func send(_ signal: RtcSignal, to peer: String) async throws(SignalError) {
            // Recorded before it leaves, so that a reply that comes at once finds its tap.
            await hub.sent(signal, to: peer, by: id)
            try await hub.provider.send(signal, to: peer)
        }

        /// This tap's signals.
        public func inputs() async -> AsyncStream<SignalingInput> { stream }

        /// The hub's provider's servers.
        public func iceServers() async -> [PeerConfiguration.IceServer] { await hub.provider.iceServers() }

        /// Ends this tap: its stream finishes and its calls are forgotten (also
        /// done when its consumer stops iterating).
        public func close() async { await hub.close(id) }

        fileprivate func deliver(_ input: SignalingInput) { continuation.yield(input) }
        fileprivate func finish() { continuation.finish() }
    }
}
