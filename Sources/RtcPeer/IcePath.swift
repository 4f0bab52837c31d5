import RtcSDP

/// The ICE pair that carries a connection, as a person reads it: each end's
/// candidate type, protocol and address, and for a relayed end of ours the
/// protocol we reach the TURN server with. `PeerStats.path`.
public struct IcePath: Sendable, Equatable, CustomStringConvertible {
    /// One end of the pair.
    public struct End: Sendable, Equatable {
        /// `host`, `srflx`, `prflx` or `relay` (RFC 8445 §5.1.1).
        public var type: String
        /// `udp` or `tcp`.
        public var transport: String
        /// The candidate's IP address.
        public var address: String
        /// The candidate's port.
        public var port: UInt16
    }

    /// Our end.
    public var local: End
    /// The peer's end.
    public var remote: End
    /// For a relayed end of ours: how we reach its TURN server (`udp`,
    /// `tcp` or `tls`, as the agent's TURN bridge knows it); nil if unknown.
    public var turnTransport: String?

    /// The path of a selected pair given as candidate lines; nil if a line
    /// does not parse. `turnTransport(address:port:)` names how a relayed
    /// end of ours reaches its server (`IceAgent.turnTransport(relaying:)`:
    /// libnice, reaching every server through the bridge over TCP, ranks
    /// every relay alike, so the priority no longer tells).
    public init?(local: String, remote: String, turnTransport: (String) -> String? = { _ in nil }) {
        guard let ours = try? Candidate(parsing: local), let theirs = try? Candidate(parsing: remote) else {
            return nil
        }
        self.local = End(ours)
        self.remote = End(theirs)
        if ours.type == .relay { self.turnTransport = turnTransport("\(ours.address):\(ours.port)") }
    }

    /// No TURN server on the way: host, server- or peer-reflexive at both ends.
    public var isDirect: Bool { local.type != "relay" && remote.type != "relay" }

    /// `srflx udp 203.0.113.11:52830 → relay udp 203.0.113.1:40184`, with
    /// `(TURN over tcp)` after a relayed end of ours.
    public var description: String {
        let turn = turnTransport.map { " (TURN over \($0))" } ?? ""
        return "\(local.type) \(local.transport) \(local.address):\(local.port)\(turn)"
            + " → \(remote.type) \(remote.transport) \(remote.address):\(remote.port)"
    }

    /// For JSON summaries and events.
    public var json: [String: any Sendable] {
        var object: [String: any Sendable] = [
            "local": local.json, "remote": remote.json, "direct": isDirect,
        ]
        if let turnTransport { object["turnTransport"] = turnTransport }
        return object
    }
}

extension IcePath.End {
    init(_ candidate: Candidate) {
        self.init(
            type: candidate.type.rawValue, transport: candidate.transport, address: candidate.address,
            port: candidate.port)
    }

    var json: [String: any Sendable] {
        ["type": type, "transport": transport, "address": address, "port": Int(port)]
    }
}
