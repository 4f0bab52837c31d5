import CarrierWire
import Foundation

/// How a node is set up: where it keeps its identity, how it reaches the
/// network, and the timeouts of its protocols.
public struct CarrierOptions: Sendable {
    /// Identity and friend list live here (file `carrier.data`, mode 0600).
    /// nil keeps nothing on disk: a fresh identity each run (bootstrap nodes, tests).
    public var dataDirectory: String?
    /// Nodes to join the network through (asked again while off the network).
    public var bootstrapNodes: [BootstrapNode] = []
    /// false forces TCP relays.
    public var udpEnabled = true
    /// Keep all traffic on 127.0.0.1: no LAN discovery, no IPv6. toxcore cannot
    /// bind to an address, so this also needs loopback bootstrap nodes.
    public var loopbackOnly = false
    /// UDP ports to try, in order; nil tries 100 ports from a random start in 33445...34444.
    public var udpPorts: ClosedRange<UInt16>?
    /// When set, this node also serves as a TCP relay on that port (bootstrap nodes).
    public var tcpRelayPort: UInt16?
    /// A 32-byte secret key to create the identity from (import). Refused if the
    /// data directory already holds a different identity.
    public var secretKey: [UInt8]?
    /// An identity from a Carrier app's `carrier.data` (wire notes §8.2): its
    /// toxcore save (keys, nospam, friends, profile) and its friend labels.
    /// Only for a data directory that holds no identity yet.
    public var carrierData: CarrierDataFile?
    /// An invite with no reply ends with `InviteReply.timeout` after this long.
    public var inviteTimeout: Duration = .seconds(300)
    /// An incomplete fragmented message or invite is dropped after this long.
    public var fragmentTimeout: Duration = .seconds(60)
    /// A sent message with no receipt by then gets an error receipt.
    public var receiptTimeout: Duration = .seconds(60)
    /// The loop sleeps this long between iterations while traffic is in flight
    /// (field notes: latency follows this sleep), and at most `idleInterval` otherwise.
    public var busyInterval: Duration = .milliseconds(2)
    /// (See `busyInterval`.)
    public var idleInterval: Duration = .milliseconds(20)
    /// A file offered by a friend that is larger than this is refused at once.
    public var maxIncomingFileSize: UInt64 = 1 << 40
    /// Speak the Carrier network's framing under toxcore: the magic on every
    /// UDP datagram and TCP relay frame (`CarrierFraming`, wire notes §1.1).
    /// A node with it and one without cannot reach each other. On by
    /// default: the node speaks Carrier's packets on Carrier's network; off
    /// for a plain Tox network (`--stock-toxcore`).
    public var carrierFraming = true
    /// An offered file the application neither accepts nor refuses by then is refused.
    public var fileOfferTimeout: Duration = .seconds(600)
    /// Files one friend may have under way to us at once (of 64 for all friends).
    public var maxIncomingFilesPerFriend = 8
    /// An accepted file with nothing arriving for this long ends (its bytes kept for a resume).
    public var fileStallTimeout: Duration = .seconds(600)
    /// Partial files kept for resumes in a receive directory: at most this old…
    public var partialFilesMaxAge: Duration = .seconds(7 * 24 * 3600)
    /// …and at most this many bytes together (the oldest go first).
    public var partialFilesMaxBytes: UInt64 = 4 << 30
    /// Space a receive directory's disk keeps free beside the files being received.
    public var diskReserve: UInt64 = 512 << 20
    /// Express nodes for offline delivery and TURN credentials, tried in order.
    public var expressNodes: [ExpressNode] = []
    /// TURN the Carrier way (wire notes §4): credentials this node derives
    /// for a bootstrap node's relay (HMAC of the key it shares with that
    /// node), realm `elastos.org`, on `carrierTurnPort` of the bootstrap's
    /// host. For a node on the Carrier network (`--network carrier`), whose
    /// bootstrap nodes run the patched coturn; our own deployments hand out
    /// REST credentials from Express instead.
    public var turnFromBootstrap = false
    /// The port of a bootstrap node's TURN server (Carrier's: 3478).
    public var carrierTurnPort: UInt16 = CarrierTurnCredentials.port
    /// How often the node pulls its offline messages (also on start and when a friend connects).
    public var expressPullInterval: Duration = .seconds(300)
    /// A message whose receipt has not come by then goes to Express too (receipt `.offline`).
    public var offlineFallbackAfter: Duration = .seconds(30)
    /// toxcore connected over UDP yet no datagram from any other node for this
    /// long: the node counts as off the network (`IsolationCheck`; toxcore can
    /// end up talking only to itself). Shorter only in tests.
    public var aloneAfter: Duration = .seconds(60)

    /// How long a friend someone waits for (`waitUntilConnected`) may stay
    /// offline, while this node is on the network, before toxcore's link to it
    /// starts afresh (`FriendLinkRefresh`); the wait then doubles. Shorter only in tests.
    public var friendLinkRefreshAfter: Duration = FriendLinkRefresh.first

    /// Whether a node long off the network starts toxcore afresh
    /// (`OfflineRecovery`): not a bootstrap node (`tcpRelayPort` set), whose
    /// port and DHT key others hold, nor a node without bootstrap nodes.
    public var restartsWhenOffline: Bool { tcpRelayPort == nil && !bootstrapNodes.isEmpty }

    /// Options with the defaults above.
    public init(dataDirectory: String? = nil, bootstrapNodes: [BootstrapNode] = []) {
        self.dataDirectory = dataDirectory
        self.bootstrapNodes = bootstrapNodes
    }
}

/// A node to join the network through: its host, UDP/TCP port and DHT key.
public struct BootstrapNode: Equatable, Sendable, Codable, CustomStringConvertible {
    /// An IP address or host name.
    public var host: String
    /// Its UDP port (and TCP relay port).
    public var port: UInt16
    /// Its DHT key (32 bytes), new at each start of the node.
    public var publicKey: [UInt8]

    /// A node by address and key.
    public init(host: String, port: UInt16, publicKey: [UInt8]) {
        self.host = host
        self.port = port
        self.publicKey = publicKey
    }

    /// `host:port:key`, the key in base58 (as `carrier node` prints it) or 64 hex digits.
    public init(parsing text: String) throws(CarrierError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts[0].isEmpty, let port = UInt16(parts[1]), port > 0 else {
            throw .invalidArgument("bootstrap node \"\(text)\" is not host:port:key")
        }
        guard let key = Self.parseKey(parts[2]) else {
            throw .invalidArgument("bootstrap key \"\(parts[2])\" is not 32 bytes in base58 or hex")
        }
        self.init(host: parts[0], port: port, publicKey: key)
    }

    static func parseKey(_ text: String) -> [UInt8]? {
        let bytes = text.count == 64 ? Hex.decode(text) : Base58.decode(text)
        guard let bytes, bytes.count == 32 else { return nil }
        return bytes
    }

    /// `host:port:key`, the key in base58.
    public var description: String { "\(host):\(port):\(Base58.encode(publicKey))" }

    enum CodingKeys: String, CodingKey { case host, port, publicKey }

    /// Decodes `{"host","port","publicKey"}` (key in base58 or hex).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        host = try container.decode(String.self, forKey: .host)
        port = try container.decode(UInt16.self, forKey: .port)
        let keyText = try container.decode(String.self, forKey: .publicKey)
        guard let key = Self.parseKey(keyText) else {
            throw DecodingError.dataCorruptedError(
                forKey: .publicKey, in: container, debugDescription: "not a 32-byte key in base58 or hex")
        }
        publicKey = key
    }

    /// Encodes `{"host","port","publicKey"}`, the key in base58.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(host, forKey: .host)
        try container.encode(port, forKey: .port)
        try container.encode(Base58.encode(publicKey), forKey: .publicKey)
    }
}

/// The JSON config file of `--config FILE`:
/// `{"bootstrap":[{"host":"127.0.0.1","port":33445,"publicKey":"<base58>"}],"udp":true,"loopbackOnly":false,
///   "express":[{"host":"127.0.0.1","port":8080,"publicKey":"<base58>"}],
///   "iceServers":[{"urls":["turn:turn.example.org:3478"],"username":"u","credential":"p"}]}`.
public struct NetworkConfig: Codable, Sendable {
    /// Nodes to join through.
    public var bootstrap: [BootstrapNode]
    /// Express nodes, tried in order.
    public var express: [ExpressNode]?
    /// false: TCP relays only.
    public var udp: Bool?
    /// true: keep all traffic on 127.0.0.1.
    public var loopbackOnly: Bool?
    /// STUN and TURN servers for calls and sessions, as the W3C RTCIceServer
    /// gives them (the URLs are checked where they are used).
    public var iceServers: [IceServer]?
    /// What friends may hold of a node that answers them (`listen`); each
    /// field the command line's option of the same meaning overrides.
    public var limits: Limits?
    /// A public network to join besides `bootstrap` (`CarrierNetwork`: "carrier").
    public var network: String?

    /// The `limits` object (docs/configuration.md, docs/security.md).
    public struct Limits: Codable, Sendable, Equatable {
        /// Calls and sessions under way at most (`--max-calls`).
        public var maxCalls: Int?
        /// Of those, with one friend (`--max-calls-per-friend`).
        public var maxCallsPerFriend: Int?
        /// Files one friend has under way (`--max-files-per-friend`).
        public var maxFilesPerFriend: Int?
        /// MiB saved of one session stream (`--max-stream-mb`).
        public var maxStreamMB: Int?
        /// MiB the disk keeps free (`--disk-reserve-mb`).
        public var diskReserveMB: Int?

        /// None set: every limit at its default.
        public init() {}
    }

    /// One `iceServers` entry: `urls` a string or a list, credentials for TURN.
    public struct IceServer: Codable, Sendable, Equatable {
        /// `stun:`, `turn:` or `turns:` URLs sharing the credentials.
        public var urls: [String]
        /// The TURN username.
        public var username: String?
        /// The TURN password.
        public var credential: String?

        private enum CodingKeys: String, CodingKey { case urls, username, credential }

        /// Reads `urls` as one string or a list of them.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let one = try? container.decode(String.self, forKey: .urls) {
                urls = [one]
            } else {
                urls = try container.decode([String].self, forKey: .urls)
            }
            username = try container.decodeIfPresent(String.self, forKey: .username)
            credential = try container.decodeIfPresent(String.self, forKey: .credential)
        }

        /// An entry for these URLs and credentials.
        public init(urls: [String], username: String? = nil, credential: String? = nil) {
            self.urls = urls
            self.username = username
            self.credential = credential
        }
    }

    /// Reads a configuration file; an error names what is wrong in it.
    public static func load(path: String) throws(CarrierError) -> NetworkConfig {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .invalidArgument("cannot read config file \(path): \(error.localizedDescription)")
        }
        do { return try JSONDecoder().decode(NetworkConfig.self, from: data) } catch {
            throw .invalidArgument("config file \(path) is not valid: \(error)")
        }
    }
}
