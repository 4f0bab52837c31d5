import CarrierNode
import CarrierSignaling
import RtcCalls

/// What the daemon shares with the commands it runs for clients: its node
/// (online for as long as it runs) and one signaling hub per extension, so
/// that its own answering and every client's calls and sessions use the one
/// handler the node has for each extension.
actor DaemonContext {
    nonisolated let node: Carrier
    /// The daemon's network options, which its clients' commands run with
    /// (`--loopback` keeps their calls' candidates on 127.0.0.1 too).
    nonisolated let network: GlobalOptions
    private var hubs: [String: SignalingHub] = [:]
    /// The limits `listen` applies to calls, sessions and streams, for `status`.
    private(set) var answeringLimits: [String: any Sendable] = [:]

    /// What `listen` bounds its calls, sessions and streams to (reported by `status`).
    func setAnsweringLimits(_ limits: [String: any Sendable]) { answeringLimits = limits }

    init(node: Carrier, network: GlobalOptions) {
        self.node = node
        self.network = network
    }

    /// The hub over `extensionName`, registered on first use (a node that
    /// never calls does not claim the calls' extension).
    func signaling(_ extensionName: String) async throws -> SignalingHub {
        if let hub = hubs[extensionName] { return hub }
        let hub = SignalingHub(try await CarrierSignalingProvider(carrier: node, extensionName: extensionName))
        hubs[extensionName] = hub
        return hub
    }

    func stop() async {
        for hub in hubs.values { await hub.stop() }
        hubs.removeAll()
    }
}
