/// Collects one m-section's attributes while parsing; payload mappings can
/// come in any order, so codecs are assembled at the end of the section.
struct MediaBuilder {
    var media: MediaDescription
    private var rtpmaps: [UInt8: (name: String, clockRate: UInt32, channels: Int?)] = [:]
    private var fmtps: [UInt8: String] = [:]
    private var feedback: [UInt8: [String]] = [:]
    private var wildcardFeedback: [String] = []

    /// RFC 3551 static payload types that peers list without an rtpmap.
    static let staticPayloads: [UInt8: (String, UInt32, Int?)] = [
        0: ("PCMU", 8000, 1), 8: ("PCMA", 8000, 1), 9: ("G722", 8000, 1), 13: ("CN", 8000, 1),
    ]

    init(media: MediaDescription) { self.media = media }

    mutating func add(name: String, value: String?, parser: inout SDPParser) throws(SDPError) {
        let text = value ?? ""
        switch name {
        case "mid": media.mid = text.trimmingWhitespace
        case "sendrecv", "sendonly", "recvonly", "inactive": media.direction = Direction(rawValue: name)
        case "msid": media.msid = text
        case "rtcp": media.rtcp = text
        case "rtcp-mux": media.rtcpMux = true
        case "rtcp-rsize": media.rtcpReducedSize = true
        case "ice-ufrag": media.iceUfrag = text
        case "ice-pwd": media.icePwd = text
        case "ice-options": media.iceOptions = text.split(separator: " ").map(String.init)
        case "fingerprint": media.fingerprints.append(try parser.fingerprint(value))
        case "setup": media.setup = try parser.setupRole(value)
        case "candidate":
            do { media.candidates.append(try Candidate(parsing: text)) } catch { throw parser.fail(error.reason) }
        case "end-of-candidates": media.endOfCandidates = true
        case "rtpmap":
            let (payload, rest) = try payloadAndRest(text, parser: parser)
            let parts = rest.split(separator: "/")
            guard parts.count >= 2, !parts[0].isEmpty else { throw parser.fail("rtpmap needs <name>/<clock rate>") }
            let clock: UInt32 = try parser.number(parts[1], "clock rate")
            let channels: Int? = parts.count > 2 ? try parser.number(parts[2], "channel count") : nil
            rtpmaps[payload] = (String(parts[0]), clock, channels)
        case "fmtp":
            let (payload, rest) = try payloadAndRest(text, parser: parser)
            fmtps[payload] = rest
        case "rtcp-fb":
            let parts = text.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw parser.fail("rtcp-fb needs <payload> <type>") }
            if parts[0] == "*" {
                wildcardFeedback.append(parts[1])
            } else {
                let payload: UInt8 = try parser.number(Substring(parts[0]), "payload type")
                feedback[payload, default: []].append(parts[1])
            }
        case "extmap":
            let parts = text.split(separator: " ", maxSplits: 2).map(String.init)
            guard parts.count >= 2 else { throw parser.fail("extmap needs <id> <uri>") }
            let idParts = parts[0].split(separator: "/")
            guard let idText = idParts.first else { throw parser.fail("extmap needs <id> <uri>") }
            let id: Int = try parser.number(idText, "extension id")
            guard (1...255).contains(id) else { throw parser.fail("extension id must be 1-255") }
            let direction = idParts.count > 1 ? Direction(rawValue: String(idParts[1])) : nil
            media.headerExtensions.append(
                .init(id: id, direction: direction, uri: parts[1], attributes: parts.count > 2 ? parts[2] : nil))
        case "ssrc":
            let parts = text.split(separator: " ", maxSplits: 1).map(String.init)
            guard let ssrcText = parts.first else { throw parser.fail("ssrc needs a number") }
            let ssrc: UInt32 = try parser.number(Substring(ssrcText), "ssrc")
            guard parts.count == 2 else {
                media.ssrcs.append(.init(ssrc: ssrc, attribute: ""))
                return
            }
            let (attribute, attributeValue) = SDPParser.splitAttribute(parts[1])
            media.ssrcs.append(.init(ssrc: ssrc, attribute: attribute, value: attributeValue))
        case "ssrc-group":
            let parts = text.split(separator: " ")
            guard let semantics = parts.first else { throw parser.fail("empty ssrc-group") }
            var ssrcs: [UInt32] = []
            for part in parts.dropFirst() { ssrcs.append(try parser.number(part, "ssrc")) }
            media.ssrcGroups.append(.init(semantics: String(semantics), ssrcs: ssrcs))
        case "sctp-port":
            media.sctpPort = try parser.number(Substring(text), "sctp-port")
        case "max-message-size":
            media.maxMessageSize = try parser.number(Substring(text), "max-message-size")
        case "sctpmap":
            // Pre-RFC 8841 peers: `a=sctpmap:5000 webrtc-datachannel 1024`.
            if media.sctpPort == nil, let port = text.split(separator: " ").first { media.sctpPort = UInt16(port) }
            media.otherAttributes.append(Attribute(name, value))
        default:
            media.otherAttributes.append(Attribute(name, value))
        }
    }

    private func payloadAndRest(_ text: String, parser: SDPParser) throws(SDPError) -> (UInt8, String) {
        let parts = text.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { throw parser.fail("expected <payload type> <value>") }
        let payload: UInt8 = try parser.number(Substring(parts[0]), "payload type")
        guard payload < 128 else { throw parser.fail("payload type \(payload) is above 127") }
        return (payload, parts[1])
    }

    /// The section with its codecs, in the order of the m-line's format list.
    func build(_ parser: inout SDPParser) throws(SDPError) -> MediaDescription {
        var media = media
        guard !media.isDataChannel else { return media }
        for format in media.formats {
            guard let payload = UInt8(format), payload < 128 else { continue }
            let mapping = rtpmaps[payload] ?? Self.staticPayloads[payload].map { ($0.0, $0.1, $0.2) }
            guard let (name, clockRate, channels) = mapping else { continue }
            media.codecs.append(
                RtpCodec(
                    payloadType: payload, name: name, clockRate: clockRate, channels: channels,
                    parameters: fmtps[payload], feedback: wildcardFeedback + (feedback[payload] ?? [])))
        }
        return media
    }
}
