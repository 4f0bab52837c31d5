/// An ICE candidate line (RFC 8839 §5.1):
/// `candidate:<foundation> <component> <transport> <priority> <address> <port> typ <type>
/// [raddr <address> rport <port>] [tcptype <type>] *(<name> <value>)`.
public struct Candidate: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Candidates with the same foundation share a base and a server (RFC 8445 §5.1.1.3).
    public var foundation: String
    /// 1 (RTP; RTCP is muxed on it in WebRTC).
    public var component: Int
    /// `udp` or `tcp`, lower-cased.
    public var transport: String
    /// The pair-forming priority (RFC 8445 §5.1.2).
    public var priority: UInt32
    /// An IP address, or an mDNS name ending in `.local`.
    public var address: String
    /// The candidate's port.
    public var port: UInt16
    /// How it was found.
    public var type: CandidateType
    /// For reflexive and relay candidates: the base's address (`raddr`).
    public var relatedAddress: String?
    /// …and port (`rport`).
    public var relatedPort: UInt16?
    /// For TCP candidates: `active`, `passive` or `so`.
    public var tcpType: String?
    /// Extension attributes in order (`generation 0`, `ufrag abc`, `network-id 1`, ...).
    public var extensions: [(name: String, value: String)]

    /// Host, server reflexive, peer reflexive or relayed (RFC 8445 §5.1.1).
    public enum CandidateType: String, Sendable {
        case host, srflx, prflx, relay
    }

    /// A candidate from its fields.
    public init(
        foundation: String, component: Int, transport: String, priority: UInt32, address: String, port: UInt16,
        type: CandidateType, relatedAddress: String? = nil, relatedPort: UInt16? = nil, tcpType: String? = nil,
        extensions: [(name: String, value: String)] = []
    ) {
        self.foundation = foundation
        self.component = component
        self.transport = transport
        self.priority = priority
        self.address = address
        self.port = port
        self.type = type
        self.relatedAddress = relatedAddress
        self.relatedPort = relatedPort
        self.tcpType = tcpType
        self.extensions = extensions
    }

    /// Parses `candidate:...`, with or without the `a=` and `candidate:` prefixes.
    public init(parsing text: String) throws(SDPError) {
        var value = Substring(text.trimmingWhitespace)
        if value.hasPrefix("a=") { value = value.dropFirst(2) }
        if value.hasPrefix("candidate:") { value = value.dropFirst("candidate:".count) }
        let fields = value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        func fail(_ reason: String) -> SDPError { SDPError(line: 0, text: text, reason: "candidate: \(reason)") }
        guard fields.count >= 8 else { throw fail("needs at least 8 fields, has \(fields.count)") }
        guard let component = Int(fields[1]), (1...256).contains(component) else { throw fail("bad component") }
        guard let priority = UInt32(fields[3]) else { throw fail("bad priority \(fields[3])") }
        guard let port = UInt16(fields[5]) else { throw fail("bad port \(fields[5])") }
        guard fields[6] == "typ", let type = CandidateType(rawValue: fields[7].lowercased()) else {
            throw fail("bad candidate type")
        }
        guard !fields[0].isEmpty, fields[0].count <= 32 else { throw fail("bad foundation") }
        self.init(
            foundation: fields[0], component: component, transport: fields[2].lowercased(), priority: priority,
            address: fields[4], port: port, type: type)
        var index = 8
        while index + 1 < fields.count {
            let name = fields[index]
            let value = fields[index + 1]
            switch name {
            case "raddr": relatedAddress = value
            case "rport":
                guard let port = UInt16(value) else { throw fail("bad rport \(value)") }
                relatedPort = port
            case "tcptype": tcpType = value
            default: extensions.append((name, value))
            }
            index += 2
        }
    }

    /// The attribute value, without `a=`: `candidate:...`.
    public var description: String {
        var parts = [
            "candidate:\(foundation)", "\(component)", transport, "\(priority)", address, "\(port)", "typ",
            type.rawValue,
        ]
        if let relatedAddress { parts += ["raddr", relatedAddress] }
        if let relatedPort { parts += ["rport", "\(relatedPort)"] }
        if let tcpType { parts += ["tcptype", tcpType] }
        for (name, value) in extensions { parts += [name, value] }
        return parts.joined(separator: " ")
    }

    /// The value of an extension attribute such as `ufrag`.
    public func extensionValue(_ name: String) -> String? { extensions.first { $0.name == name }?.value }

    /// Equal when they write the same line.
    public static func == (lhs: Candidate, rhs: Candidate) -> Bool { lhs.description == rhs.description }
    /// Hashes the line.
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }
}

extension String {
    var trimmingWhitespace: String {
        var view = Substring(self)
        while let first = view.first, first.isWhitespace { view = view.dropFirst() }
        while let last = view.last, last.isWhitespace { view = view.dropLast() }
        return String(view)
    }
}
