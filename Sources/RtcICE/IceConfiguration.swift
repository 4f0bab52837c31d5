/// How an ICE agent gathers and checks candidates.
public struct IceConfiguration: Sendable {
    /// A TURN server to gather relay candidates from.
    public struct TurnServer: Sendable, Equatable {
        /// How the agent reaches the TURN server.
        public enum Transport: Sendable { case udp, tcp, tls }
        /// An IP address or a host name (libnice resolves names itself,
        /// off its thread, before it asks the server).
        public var host: String
        /// The TURN server's port (3478 usually).
        public var port: UInt16
        /// The TURN username (for REST credentials, `expiry:user`).
        public var username: String
        /// The TURN password; never logged.
        public var password: String
        /// UDP unless told otherwise.
        public var transport: Transport

        /// A TURN server at an IP address.
        public init(host: String, port: UInt16, username: String, password: String, transport: Transport = .udp) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.transport = transport
        }
    }

    /// The controlling agent nominates the pair (the offerer, in WebRTC).
    public var controlling: Bool
    /// STUN server for server-reflexive candidates (IP and port).
    public var stunServer: (host: String, port: UInt16)?
    /// TURN servers for relay candidates.
    public var turnServers: [TurnServer] = []
    /// Local addresses to gather host candidates on. Empty means every
    /// interface but loopback (libnice's default); `["127.0.0.1"]` keeps a test on loopback.
    public var localAddresses: [String] = []
    /// Gather relay candidates only (and so connect through TURN).
    public var relayOnly = false
    /// Milliseconds between connectivity checks. libnice's default of 20 ms
    /// sets the connection time on a LAN (field notes: 20 ms at 20, 1.3 ms at 1).
    public var pacingMilliseconds: UInt32 = 2
    /// How many times a connectivity check is sent before its pair fails:
    /// with libnice's doubling timer, 7 sends at 0, 0.5, 1.5, 3.5, 7.5, 15.5
    /// and 31.5 s and a failure at 39.5 s. libnice's default (3: failed at
    /// 2 s) gave up on pairs whose NAT holes opened a moment later, and on
    /// relayed pairs whose permissions came late; browsers keep checking for
    /// tens of seconds too. Gathering keeps libnice's 3 (`IceAgent`).
    public var checkRetransmissions: UInt32 = 7
    /// RFC 7675 consent freshness: a peer that stops answering is dropped.
    public var consentFreshness = true
    /// Gather TCP host candidates as well (off: it slows UDP-only setups down).
    public var tcpCandidates = false

    /// A configuration with the defaults above.
    public init(controlling: Bool) { self.controlling = controlling }

    /// Equal in what decides the candidates gathered and the role.
    public static func == (lhs: IceConfiguration, rhs: IceConfiguration) -> Bool {
        lhs.controlling == rhs.controlling && lhs.turnServers == rhs.turnServers
            && lhs.localAddresses == rhs.localAddresses && lhs.relayOnly == rhs.relayOnly
    }
}

/// The connection state of the (single, RTCP-muxed) ICE component.
public enum IceState: String, Sendable {
    case new, gathering, checking, connected, completed, failed, disconnected, closed
}

/// What an ICE agent reports, on its GLib thread.
public enum IceEvent: Sendable, Equatable {
    /// A local candidate to signal (the SDP attribute value, `candidate:...`).
    case localCandidate(String)
    case gatheringComplete
    case stateChanged(IceState)
    /// The pair in use changed (local and remote candidate lines).
    case selectedPair(local: String, remote: String)
    /// A TURN server (`host:port` as configured) dropped our allocation: it
    /// answered that it has none, closed our TCP connection, or is not there
    /// (restarted). Its relay candidate is dead; libnice keeps it (and its
    /// pairs fail). When the pair in use is relayed, the agent checks every
    /// pair afresh at once, so one through another server takes over.
    case relayLost(server: String)
}
