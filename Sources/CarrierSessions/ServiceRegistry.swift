import CarrierLog

/// The TCP services a node offers to friends over port-forwarding streams
/// (`carrier listen --service NAME=HOST:PORT`): each forwarded connection
/// names a service, and is connected to it if the friend may use it.
public actor ServiceRegistry {
    /// One TCP service offered to friends, by name.
    public struct Service: Sendable, Equatable {
        /// The name friends ask for (`carrier forward FRIEND NAME`).
        public var name: String
        /// Where the service listens (an IPv4 address, usually 127.0.0.1).
        public var host: String
        /// The service's TCP port.
        public var port: UInt16
        /// The friends who may use it; nil: every friend.
        public var allowed: Set<String>?

        /// A service; `allowed` lists the user ids that may use it (nil: every friend).
        public init(name: String, host: String, port: UInt16, allowed: Set<String>? = nil) {
            self.name = name
            self.host = host
            self.port = port
            self.allowed = allowed
        }
    }

    /// What happened to one forwarded connection (for the node's log and events).
    public struct Connection: Sendable {
        /// The friend's user id.
        public var peer: String
        /// The service the friend asked for.
        public var service: String
        /// Bytes from the friend to the service, and back.
        public var bytesIn = 0
        /// Bytes from the service back to the friend.
        public var bytesOut = 0
        /// Why it was refused or cut, if it was.
        public var error: String?
    }

    private var services: [String: Service] = [:]
    private var report: (@Sendable (Connection) -> Void)?
    private let log = Logger("sessions")
    /// How long connecting to a service may take.
    static let connectTimeout = Duration.seconds(10)

    /// No services yet.
    public init() {}

    /// Offers a service (replacing one with the same name).
    public func add(_ service: Service) { services[service.name] = service }
    /// Stops offering a service; connections already open go on.
    public func remove(_ name: String) { services[name] = nil }
    /// The services offered now.
    public var all: [Service] { Array(services.values) }
    /// Called once per forwarded connection, when it ends or is refused.
    public func onConnection(_ report: (@Sendable (Connection) -> Void)?) { self.report = report }

    /// A friend's forwarded connection: refused with a reason it can show, or
    /// connected to the service and carried until both sides are done.
    func serve(_ channel: StreamChannel, service name: String, for peer: String) async {
        var connection = Connection(peer: peer, service: name)
        guard let service = services[name] else {
            connection.error = "no service \"\(name)\" here"
            return refuse(channel, connection)
        }
        if let allowed = service.allowed, !allowed.contains(peer) {
            connection.error = "\(peer) may not use \"\(name)\""
            return refuse(channel, connection)
        }
        let socket: TcpSocket
        do {
            socket = try await TcpSocket.connect(host: service.host, port: service.port, timeout: Self.connectTimeout)
        } catch {
            connection.error = "\"\(name)\" is down: \(error)"
            return refuse(channel, connection)
        }
        channel.accept()
        let report = report
        Task {
            let outcome = await TcpBridge.run(socket, channel)
            connection.bytesIn = outcome.received
            connection.bytesOut = outcome.sent
            connection.error = outcome.reset
            report?(connection)
        }
    }

    private func refuse(_ channel: StreamChannel, _ connection: Connection) {
        log.info("refused a forwarded connection from \(connection.peer): \(connection.error ?? "")")
        channel.refuse(connection.error ?? "refused")
        report?(connection)
    }
}
