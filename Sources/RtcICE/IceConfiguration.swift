/// How an ICE agent gathers and checks candidates.
public struct IceConfiguration: Sendable {
    public struct TurnServer: Sendable, Equatable {
        public enum Transport: Sendable { case udp, tcp, tls }
        /// An IP address: libnice does not resolve names.
        public var host: String
        public var port: UInt16
        public var username: String
        public var password: String
        public var transport: Transport

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
    public var turnServers: [TurnServer] = []
    /// Local addresses to gather host candidates on. Empty means every
    /// interface but loopback (libnice's default); `["127.0.0.1"]` keeps a test on loopback.
    public var localAddresses: [String] = []
    /// Gather relay candidates only (and so connect through TURN).
    public var relayOnly = false
    /// Milliseconds between connectivity checks. libnice's default of 20 ms
    /// sets the connection time on a LAN (field notes: 20 ms at 20, 1.3 ms at 1).
    public var pacingMilliseconds: UInt32 = 2
    /// RFC 7675 consent freshness: a peer that stops answering is dropped.
    public var consentFreshness = true
    /// Gather TCP host candidates as well (off: it slows UDP-only setups down).
    public var tcpCandidates = false

    public init(controlling: Bool) { self.controlling = controlling }

    public static func == (lhs: IceConfiguration, rhs: IceConfiguration) -> Bool {
        lhs.controlling == rhs.controlling && lhs.turnServers == rhs.turnServers
            && lhs.localAddresses == rhs.localAddresses && lhs.relayOnly == rhs.relayOnly
    }
}

/// The connection state of the (single, RTCP-muxed) ICE component.
public enum IceState: String, Sendable {
    case new, gathering, checking, connected, completed, failed, disconnected, closed
}

public enum IceEvent: Sendable, Equatable {
    /// A local candidate to signal (the SDP attribute value, `candidate:...`).
    case localCandidate(String)
    case gatheringComplete
    case stateChanged(IceState)
    /// The pair in use changed (local and remote candidate lines).
    case selectedPair(local: String, remote: String)
}
