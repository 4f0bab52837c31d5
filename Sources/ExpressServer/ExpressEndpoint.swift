import CarrierNode

/// An Express node on the network: the service behind an HTTP server.
/// (Not named after its module, `ExpressServer`, so the module's names stay qualifiable.)
public final class ExpressEndpoint: Sendable {
    /// The service that answers requests.
    public let service: ExpressService
    /// The HTTP server in front of it.
    public let server: HttpServer
    /// The address it listens on and names in `entry`.
    public let host: String

    /// Starts the service and its HTTP server on `host:port` (0: a free port).
    public init(
        host: String = "127.0.0.1", port: UInt16 = 0, configuration: ExpressService.Configuration,
        tls: HttpServer.Tls? = nil
    ) throws {
        service = try ExpressService(configuration: configuration)
        self.host = host
        let service = service
        var limits = HttpServer.Limits(maxBodySize: ExpressProtocol.maxBodySize)
        // On PostgreSQL requests run in parallel: a thread per pooled connection.
        if case .postgres = configuration.database {
            limits.threads = UInt32(max(1, configuration.databaseConnections))
        }
        server = try HttpServer(host: host, port: port, limits: limits, tls: tls, handler: { service.handle($0) })
    }

    /// `host:port:key` for `--express`.
    public var entry: ExpressNode { ExpressNode(host: host, port: server.port, publicKey: service.publicKey) }

    /// Stops serving and lets go of the store (which stays on disk).
    public func stop() {
        server.stop()
        service.close()
    }
}
