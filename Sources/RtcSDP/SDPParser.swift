/// Parses SDP text: tolerant of what real peers send (either line ending,
/// unknown lines and attributes, attribute order, session- or media-level ICE
/// and DTLS attributes) and strict where a value matters (numbers, the m-line,
/// fingerprints, setup roles, candidates, payload mappings).
struct SDPParser {
    private var lineNumber = 0
    private var lineText = ""

    static let maxLength = 256 * 1024
    /// Browsers offer a few sections, a conference a few dozen; thousands only
    /// cost the answerer (each becomes a transceiver with its SSRC and codec).
    public static let maxMediaSections = 256

    mutating func parse(_ text: String) throws(SDPError) -> SessionDescription {
        guard text.utf8.count <= Self.maxLength else {
            throw SDPError(line: 0, text: "", reason: "longer than \(Self.maxLength) bytes")
        }
        var session: SessionDescription?
        var sawVersion = false
        var current: MediaBuilder?
        var sessionName = "-"
        var timing = "0 0"
        var connection: String?
        var sessionAttributes: [(String, String?)] = []
        var media: [MediaDescription] = []

        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            lineNumber = index + 1
            let line = String(raw).trimmingWhitespace
            lineText = line
            if line.isEmpty { continue }
            let chars = Array(line.utf8)
            guard chars.count >= 2, chars[1] == UInt8(ascii: "="), chars[0].isASCIILetter else {
                throw fail("not a <type>=<value> line")
            }
            let type = Character(UnicodeScalar(chars[0]))
            let value = String(line.dropFirst(2))
            if !sawVersion {
                guard type == "v", value == "0" else { throw fail("an SDP starts with v=0") }
                sawVersion = true
                continue
            }
            switch type {
            case "o":
                session = SessionDescription(origin: try parseOrigin(value))
            case "s" where current == nil: sessionName = value
            case "t" where current == nil: timing = value
            case "c":
                if current != nil { current?.media.connection = value } else { connection = value }
            case "b":
                current?.media.bandwidths.append(value)
            case "m":
                if let done = current { media.append(try done.build(&self)) }
                guard media.count < Self.maxMediaSections else {
                    throw fail("more than \(Self.maxMediaSections) media sections")
                }
                current = MediaBuilder(media: try parseMediaLine(value))
            case "a":
                let (name, attributeValue) = Self.splitAttribute(value)
                if current != nil {
                    try current!.add(name: name, value: attributeValue, parser: &self)
                } else {
                    sessionAttributes.append((name, attributeValue))
                }
            default:
                continue  // i=, u=, e=, p=, z=, k=, r=: informational, ignored
            }
        }
        lineNumber = 0
        lineText = ""
        guard sawVersion else { throw fail("empty session description") }
        guard var result = session else { throw fail("no o= line") }
        if let done = current { media.append(try done.build(&self)) }
        result.sessionName = sessionName
        result.timing = timing
        result.connection = connection
        result.media = media
        for (name, value) in sessionAttributes { try applySession(name: name, value: value, to: &result) }
        return result
    }

    private mutating func applySession(name: String, value: String?, to session: inout SessionDescription)
        throws(SDPError)
    {
        switch name {
        case "group":
            let parts = (value ?? "").split(separator: " ").map(String.init)
            guard let semantics = parts.first else { throw fail("empty group") }
            session.groups.append(.init(semantics: semantics, mids: Array(parts.dropFirst())))
        case "msid-semantic": session.msidSemantic = value?.trimmingWhitespace
        case "ice-lite": session.iceLite = true
        case "extmap-allow-mixed": session.extmapAllowMixed = true
        case "ice-ufrag": session.iceUfrag = value
        case "ice-pwd": session.icePwd = value
        case "ice-options": session.iceOptions = (value ?? "").split(separator: " ").map(String.init)
        case "fingerprint": session.fingerprints.append(try fingerprint(value))
        case "setup": session.setup = try setupRole(value)
        default: session.otherAttributes.append(Attribute(name, value))
        }
    }

    static func splitAttribute(_ text: String) -> (String, String?) {
        guard let colon = text.firstIndex(of: ":") else { return (text, nil) }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    func fail(_ reason: String) -> SDPError { SDPError(line: lineNumber, text: lineText, reason: reason) }

    private func parseOrigin(_ value: String) throws(SDPError) -> SessionDescription.Origin {
        let parts = value.split(separator: " ").map(String.init)
        guard parts.count == 6 else { throw fail("o= needs 6 fields") }
        // Session ids are decimal but may exceed 64 bits in the wild; keep what fits.
        let id = UInt64(parts[1]) ?? UInt64(parts[1].prefix(18)) ?? 0
        let version = UInt64(parts[2]) ?? UInt64(parts[2].prefix(18)) ?? 0
        return .init(username: parts[0], sessionId: id, sessionVersion: version, address: parts[5])
    }

    private func parseMediaLine(_ value: String) throws(SDPError) -> MediaDescription {
        let parts = value.split(separator: " ").map(String.init)
        guard parts.count >= 3 else { throw fail("m= needs media, port and protocol") }
        let portText = parts[1].split(separator: "/").first.map(String.init) ?? ""
        guard let port = UInt16(portText) else { throw fail("bad port \(parts[1])") }
        return MediaDescription(kind: parts[0], port: port, proto: parts[2], formats: Array(parts.dropFirst(3)))
    }

    func fingerprint(_ value: String?) throws(SDPError) -> Fingerprint {
        do { return try Fingerprint(parsing: value ?? "") } catch { throw fail(error.reason) }
    }

    func setupRole(_ value: String?) throws(SDPError) -> SetupRole {
        guard let role = SetupRole(rawValue: (value ?? "").trimmingWhitespace.lowercased()) else {
            throw fail("setup must be active, passive, actpass or holdconn")
        }
        return role
    }

    func number<T: FixedWidthInteger>(_ text: Substring, _ what: String) throws(SDPError) -> T {
        guard let value = T(text.trimmingCharacters(in: " ")) else { throw fail("bad \(what) \(text)") }
        return value
    }
}

extension UInt8 {
    var isASCIILetter: Bool { (65...90).contains(self) || (97...122).contains(self) }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> Substring {
        var view = self
        while view.first == set { view = view.dropFirst() }
        while view.last == set { view = view.dropLast() }
        return view
    }
}
