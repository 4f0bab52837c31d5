import CarrierNode
import CarrierSessions
import RtcCalls

extension SessionManager {
    /// A session manager on a started node: signals as invites to
    /// `friend:session`, friends only, TURN from the node's Express nodes.
    public static func start(on carrier: Carrier, configuration: Configuration = Configuration()) async throws
        -> SessionManager
    {
        let provider = try await CarrierSignalingProvider(carrier: carrier, extensionName: extensionName)
        return await start(on: carrier, signaling: provider, configuration: configuration)
    }

    /// A session manager whose signals go through `signaling` (a tap of a
    /// `SignalingHub` over the node's `session` extension, when several
    /// managers share one node); friends only.
    public static func start(
        on carrier: Carrier, signaling provider: any SignalingProvider, configuration: Configuration = Configuration()
    ) async -> SessionManager {
        var configuration = configuration
        let mayConnect = configuration.mayConnect
        configuration.mayConnect = { peer in
            guard let id = UserId(peer), await carrier.isFriend(id) else { return false }
            return await mayConnect(peer)
        }
        let manager = SessionManager(provider: provider, configuration: configuration)
        await manager.start()
        return manager
    }
}
