import CarrierNode

/// An Express node on the network: the service behind an HTTP server.
/// (Not named after its module, `ExpressServer`, so the module's names stay qualifiable.)
public final class ExpressEndpoint: Sendable {
    public let service: ExpressService
    public let server: HttpServer
    public let host: String

    public init(host: String = "127.0.0.1", port: UInt16 = 0, configuration: ExpressService.Configuration) throws {
        service = try ExpressService(configuration: configuration)
        self.host = host
        let service = service
        server = try HttpServer(
            host: host, port: port, limits: .init(maxBodySize: ExpressProtocol.maxBodySize),
            handler: { service.handle($0) })
    }

    /// `host:port:key` for `--express`.
    public var entry: ExpressNode { ExpressNode(host: host, port: server.port, publicKey: service.publicKey) }

    public func stop() { server.stop() }
}
