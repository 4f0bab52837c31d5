import CarrierLog
import CarrierNode
import CarrierSessions
import CarrierSignaling
import Foundation
import RtcCalls
import RtcPeer

/// Options every command takes, before or after the command name.
struct GlobalOptions {
    static let valued: Set<String> = [
        "--data", "--bootstrap", "--config", "--express", "--log-level", "--network", "--express-carrier",
    ]
    static let flags: Set<String> = ["--json", "--help", "--loopback", "--tcp-only", "--stock-toxcore"]
    static let help = """
        Global options (before or after the command):
          --data DIR                 identity and state (default: $XDG_DATA_HOME/carrier or ~/.local/share/carrier)
          --bootstrap HOST:PORT:KEY  a node to join through, as `carrier node` prints it (repeatable)
          --express HOST:PORT:KEY    an Express node for offline messages and TURN credentials,
                                     as `carrier express` prints it (repeatable, tried in order)
          --express-carrier HOST:PORT:KEY
                                     an Express node that speaks Carrier's own API (HTTPS), as
                                     the Carrier network's do and ours does beside its own
          --config FILE              JSON: {"bootstrap":[{"host":…,"port":…,"publicKey":…}],"udp":true,
                                     "loopbackOnly":false,"express":[{"host":…,"port":…,"publicKey":…}],
                                     "iceServers":[{"urls":…,"username":…,"credential":…}]}
          --network carrier          join the public Carrier network: its bootstrap nodes (the
                                     Carrier SDK's default list) and TURN on them with
                                     Carrier's credentials; reaches the internet
          --loopback                 keep all traffic on 127.0.0.1 (no LAN discovery, no IPv6)
          --tcp-only                 disable UDP; reach the network through TCP relays
          --stock-toxcore            stock toxcore framing, without the Carrier network's magic on
                                     every datagram and relay frame: for a plain Tox network.
                                     Such a node reaches no Carrier node, and none reaches it
          --json                     machine-readable output: one JSON object per line on stdout
          --log-level LEVEL          what the library logs to stderr: error, warning (default),
                                     info (drops, fallbacks) or debug
          -h, --help                 help for the command
        Logs and progress go to stderr.
        """

    var dataDirectory: String
    var bootstrap: [BootstrapNode] = []
    var express: [ExpressNode] = []
    var udp = true
    var loopback = false
    /// The Carrier network's framing under toxcore (`CarrierOptions.carrierFraming`).
    var carrierFraming = true
    /// A public network to join (`CarrierNetwork`), from `--network` or the config file.
    var network: String?
    /// The config file's STUN and TURN servers (`IceServerOptions` adds the command line's).
    var iceServers: [PeerConfiguration.IceServer] = []
    /// The config file's `limits` (options of the same meaning override them).
    var limits = NetworkConfig.Limits()
    var output: Output
    /// Set when the daemon runs the command for a client: its node and signaling.
    var daemon: DaemonContext?

    /// `applyLogLevel`: false in the daemon (a client's --log-level is not the daemon's).
    init(_ arguments: Arguments, applyLogLevel: Bool = true) throws {
        if applyLogLevel, let text = arguments.value("--log-level") {
            guard let level = LogLevel(text) else {
                throw UsageError("--log-level takes error, warning, info or debug, not \(text)")
            }
            LogSettings.level = level
        }
        dataDirectory = arguments.value("--data") ?? Self.defaultDataDirectory()
        output = Output(json: arguments.flag("--json"))
        if let path = arguments.value("--config") {
            let config = try NetworkConfig.load(path: path)
            bootstrap = config.bootstrap
            udp = config.udp ?? true
            loopback = config.loopbackOnly ?? false
            express = config.express ?? []
            iceServers = (config.iceServers ?? []).flatMap(\.peerServers)
            limits = config.limits ?? limits
            network = config.network
            for (name, value) in [
                ("maxCalls", limits.maxCalls), ("maxCallsPerFriend", limits.maxCallsPerFriend),
                ("maxFilesPerFriend", limits.maxFilesPerFriend), ("maxStreamMB", limits.maxStreamMB),
                ("diskReserveMB", limits.diskReserveMB),
            ] where (value ?? 1) < (name == "diskReserveMB" ? 0 : 1) {
                throw UsageError(
                    "config file \(path): limits.\(name) must be \(name == "diskReserveMB" ? "0 or more" : "1 or more")"
                )
            }
            for server in iceServers {
                do throws(PeerError) { try server.check() } catch {
                    throw UsageError("config file \(path): iceServers: \(error)")
                }
            }
        }
        express += try arguments.all("--express").map { text throws(CarrierError) in try ExpressNode(parsing: text) }
        express += try arguments.all("--express-carrier").map { text throws(CarrierError) in
            var node = try ExpressNode(parsing: text)
            node.api = .carrier
            return node
        }
        bootstrap += try arguments.all("--bootstrap").map { text throws(CarrierError) in
            try BootstrapNode(parsing: text)
        }
        if arguments.flag("--tcp-only") { udp = false }
        if arguments.flag("--loopback") { loopback = true }
        if arguments.flag("--stock-toxcore") { carrierFraming = false }
        if let name = arguments.value("--network") { network = name }
        if let network {
            var probe = CarrierOptions()
            guard CarrierNetwork.apply(network, to: &probe) else {
                throw UsageError(
                    "no network \"\(network)\": --network takes \(CarrierNetwork.names.joined(separator: ", "))")
            }
            if !carrierFraming { throw UsageError("the Carrier network needs its framing: drop --stock-toxcore") }
        }
    }

    static func defaultDataDirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty { return xdg + "/carrier" }
        return (environment["HOME"] ?? ".") + "/.local/share/carrier"
    }

    func nodeOptions() -> CarrierOptions {
        var options = CarrierOptions(dataDirectory: dataDirectory, bootstrapNodes: bootstrap)
        options.udpEnabled = udp
        options.loopbackOnly = loopback
        options.carrierFraming = carrierFraming
        options.expressNodes = express
        if let network { _ = CarrierNetwork.apply(network, to: &options) }
        return options
    }

    /// Opens the node from the data directory, starts it and runs `body`; the
    /// node is stopped (state saved) whatever `body` does.
    func withOnlineNode(
        _ options: CarrierOptions? = nil, _ body: (Carrier) async throws -> Int32
    ) async throws -> Int32 {
        if let daemon { return try await body(daemon.node) }
        let options = options ?? nodeOptions()
        guard !options.bootstrapNodes.isEmpty else {
            throw UsageError(
                "no bootstrap node: pass --bootstrap HOST:PORT:KEY (run `carrier node` to get one) or --config FILE")
        }
        return try await Self.stopping(try Carrier(options: options)) { node in
            try await node.start()
            return try await body(node)
        }
    }

    /// Opens the node from the data directory without going online (the
    /// daemon's node when it runs the command) and runs `body`; a node opened
    /// here is stopped (state saved) whatever `body` does.
    func withNode(_ options: CarrierOptions? = nil, _ body: (Carrier) async throws -> Int32) async throws -> Int32 {
        if let daemon { return try await body(daemon.node) }
        return try await Self.stopping(try Carrier(options: options ?? nodeOptions()), body)
    }

    /// Runs `body` on a node this command opened, then stops the node (state
    /// saved) whether `body` returned or threw.
    private static func stopping(_ node: Carrier, _ body: (Carrier) async throws -> Int32) async throws -> Int32 {
        do {
            let code = try await body(node)
            await node.stop()
            return code
        } catch {
            await node.stop()
            throw error
        }
    }

    /// The call signaling for a command: a provider of its own on the node,
    /// or a tap of the daemon's (one node has one handler per extension).
    /// A tap is closed by `close(_:)`.
    func callSignaling(on node: Carrier) async throws -> any SignalingProvider {
        if let daemon { return try await daemon.signaling(CarrierSignalingProvider.extensionName).tap() }
        return try await CarrierSignalingProvider(carrier: node)
    }

    /// A session manager for a command: on signaling of its own, or on a tap
    /// of the daemon's.
    func sessionManager(on node: Carrier, configuration: SessionManager.Configuration) async throws
        -> SessionManager
    {
        guard let daemon else { return try await SessionManager.start(on: node, configuration: configuration) }
        let tap = try await daemon.signaling(SessionManager.extensionName).tap()
        return await SessionManager.start(on: node, signaling: tap, configuration: configuration)
    }

    /// Only friends may call or be called.
    static func friendsOnly(_ node: Carrier) -> @Sendable (String) async -> Bool {
        { peer in
            guard let id = UserId(peer) else { return false }
            return await node.isFriend(id)
        }
    }

    /// For commands that reach one friend: the friend must be one, and online
    /// within `timeout` (false, said on stderr, if not).
    func waitForFriend(_ friend: UserId, on node: Carrier, timeout: Duration) async throws -> Bool {
        guard await node.isFriend(friend) else { throw CarrierError.notFriend(friend.description) }
        output.log("waiting for \(friend) to come online…")
        guard await node.waitUntilConnected(to: friend, timeout: timeout) else {
            output.log("error: \(friend) did not come online within \(timeout)")
            return false
        }
        return true
    }

    /// Waits for the network, logging if it takes a while.
    func waitUntilReady(_ node: Carrier, timeout: Duration) async throws {
        output.log("joining the network…")
        guard await node.waitUntilReady(timeout: timeout) else {
            throw CarrierError.timedOut("not connected to the network after \(timeout); check --bootstrap")
        }
    }
}
