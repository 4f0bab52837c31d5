import CarrierLog
import RtcICE

/// What a peer connection is set up with (the RTCConfiguration of the W3C API).
public struct PeerConfiguration: Sendable {
    /// `stun:` and `turn:`/`turns:` servers, as in RTCIceServer.
    public var iceServers: [IceServer] = []
    /// `.relay` forces TURN (iceTransportPolicy "relay").
    public var relayOnly = false
    /// Local addresses to gather on; `["127.0.0.1"]` keeps everything on loopback.
    public var localAddresses: [String] = []
    /// Milliseconds between ICE checks (libnice's pacing, Ta; see IceConfiguration). 1 ms: on a
    /// LAN or loopback the checks finish sooner; RFC 8445 §14.2 allows it for few pairs.
    public var icePacingMilliseconds: UInt32 = 1
    /// Drops this share (0...1) of incoming SRTP media packets at random before
    /// they are decrypted, as a lossy network would: for testing how media
    /// copes (NACK, PLI, concealment). RTCP and data channels are not touched.
    public var simulatedRtpLoss: Double = 0
    /// Whether this side will make the offer (true) or answer one (false), if the
    /// application knows: then candidates are gathered as the connection is made,
    /// off the path of the offer or answer (libnice fixes the ICE role when it
    /// gathers, so without this hint gathering waits until the role is known).
    public var willOffer: Bool?

    /// A configuration: STUN/TURN servers, relay only, and the local addresses to gather on (none: every interface but loopback).
    public init(iceServers: [IceServer] = [], relayOnly: Bool = false, localAddresses: [String] = []) {
        self.iceServers = iceServers
        self.relayOnly = relayOnly
        self.localAddresses = localAddresses
    }

    /// A STUN or TURN server, as the W3C RTCIceServer gives one.
    public struct IceServer: Sendable, Equatable {
        /// `stun:HOST:PORT` or `turn:HOST:PORT[?transport=udp|tcp]` (`turns:` for TLS); HOST a name,
        /// an IPv4 address or a bracketed IPv6 address (`[2001:db8::1]:3478`).
        public var url: String
        /// TURN username.
        public var username: String?
        /// TURN password; never logged.
        public var credential: String?

        /// A server by URL, with TURN credentials if it needs them.
        public init(url: String, username: String? = nil, credential: String? = nil) {
            self.url = url
            self.username = username
            self.credential = credential
        }

        /// Throws what is wrong with the URL, or with missing TURN credentials,
        /// before any connection is made with it.
        public func check() throws(PeerError) {
            let scheme = try PeerConfiguration.parse(url).scheme
            if scheme.hasPrefix("turn"), username == nil || credential == nil {
                throw .invalidConfiguration("\(url) needs a username and a credential")
            }
        }
    }

    func iceConfiguration(controlling: Bool) throws(PeerError) -> IceConfiguration {
        var configuration = IceConfiguration(controlling: controlling)
        configuration.localAddresses = localAddresses
        configuration.relayOnly = relayOnly
        configuration.pacingMilliseconds = icePacingMilliseconds
        for server in iceServers {
            let parsed = try Self.parse(server.url)
            switch parsed.scheme {
            case "stun", "stuns":
                // libnice asks one STUN server per agent (with none, the
                // agent asks the first TURN server over UDP: `IceAgent`).
                if configuration.stunServer == nil {
                    configuration.stunServer = (parsed.host, parsed.port)
                } else {
                    Logger("ice").info("\(server.url) not asked: libnice asks one STUN server (the first given)")
                }
            default:
                guard let username = server.username, let credential = server.credential else {
                    throw .invalidConfiguration("\(server.url) needs a username and a credential")
                }
                let transport: IceConfiguration.TurnServer.Transport =
                    parsed.scheme == "turns" ? .tls : parsed.transport == "tcp" ? .tcp : .udp
                configuration.turnServers.append(
                    .init(
                        host: parsed.host, port: parsed.port, username: username, password: credential,
                        transport: transport))
            }
        }
        return configuration
    }

    /// `stun:host[:port]`, `turn:host[:port][?transport=udp|tcp]`, `turns:host[:port]` (RFC 7064, 7065).
    static func parse(_ url: String) throws(PeerError) -> (
        scheme: String, host: String, port: UInt16, transport: String
    ) {
        let schemeEnd = url.firstIndex(of: ":")
        guard let schemeEnd else { throw .invalidConfiguration("ICE server URL \(url) has no scheme") }
        let scheme = url[..<schemeEnd].lowercased()
        guard ["stun", "stuns", "turn", "turns"].contains(scheme) else {
            throw .invalidConfiguration("ICE server URL \(url): scheme must be stun, turn or turns")
        }
        var rest = String(url[url.index(after: schemeEnd)...])
        var transport = "udp"
        if let query = rest.firstIndex(of: "?") {
            let parameters = rest[rest.index(after: query)...]
            rest = String(rest[..<query])
            for pair in parameters.split(separator: "&") where pair.hasPrefix("transport=") {
                transport = pair.dropFirst("transport=".count).lowercased()
            }
        }
        let defaultPort: UInt16 = scheme.hasSuffix("s") ? 5349 : 3478
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {  // an IPv6 literal (RFC 3986 §3.2.2)
            guard let close = rest.firstIndex(of: "]") else {
                throw .invalidConfiguration("ICE server URL \(url) has no closing ]")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else {
                throw .invalidConfiguration("ICE server URL \(url) has a bad port")
            }
            portText = after.isEmpty ? nil : after.dropFirst()
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else {
                throw .invalidConfiguration("ICE server URL \(url): put an IPv6 address in []")
            }
            host = parts[0]
            portText = parts.count == 2 ? parts[1] : nil
        }
        guard !host.isEmpty else { throw .invalidConfiguration("ICE server URL \(url) has no host") }
        let port = portText.map { UInt16($0) } ?? defaultPort
        guard let port, port > 0 else { throw .invalidConfiguration("ICE server URL \(url) has a bad port") }
        return (scheme, String(host), port, transport)
    }
}

/// Why a peer connection call failed.
public enum PeerError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidConfiguration(String)
    case invalidState(String)
    case badDescription(String)
    case transport(String)
    case closed

    /// What went wrong, in words for a log or a user.
    public var description: String {
        switch self {
        case .invalidConfiguration(let why): "configuration: \(why)"
        case .invalidState(let why): "wrong state: \(why)"
        case .badDescription(let why): "session description: \(why)"
        case .transport(let why): "transport: \(why)"
        case .closed: "the peer connection is closed"
        }
    }
}
