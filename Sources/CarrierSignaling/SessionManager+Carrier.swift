import CarrierNode
import CarrierSessions

extension SessionManager {
    /// A session manager on a started node: signals as invites to
    /// `friend:session`, friends only, TURN from the node's Express nodes.
    public static func start(on carrier: Carrier, configuration: Configuration = Configuration()) async throws
        -> SessionManager
    {
        let provider = try await CarrierSignalingProvider(carrier: carrier, extensionName: extensionName)
        var configuration = configuration
        let mayConnect = configuration.mayConnect
        configuration.mayConnect = { peer in
            guard await provider.isFriend(peer) else { return false }
            return await mayConnect(peer)
        }
        let manager = SessionManager(provider: provider, configuration: configuration)
        await manager.start()
        return manager
    }
}
