extension SessionDescription {
    /// Parses SDP text; a malformed description is an `SDPError` naming the line.
    public init(parsing text: String) throws(SDPError) {
        var parser = SDPParser()
        self = try parser.parse(text)
    }

    /// The SDP text, CRLF line endings, in the attribute order browsers use.
    public var description: String {
        var lines = [
            "v=0",
            "o=\(origin.username) \(origin.sessionId) \(origin.sessionVersion) IN IP4 \(origin.address)",
            "s=\(sessionName)",
            "t=\(timing)",
        ]
        if let connection { lines.append("c=\(connection)") }
        for group in groups { lines.append((["a=group:\(group.semantics)"] + group.mids).joined(separator: " ")) }
        if extmapAllowMixed { lines.append("a=extmap-allow-mixed") }
        if let msidSemantic { lines.append("a=msid-semantic:\(msidSemantic)") }
        if iceLite { lines.append("a=ice-lite") }
        lines += Self.transportLines(
            ufrag: iceUfrag, pwd: icePwd, options: iceOptions, fingerprints: fingerprints, setup: setup)
        lines += otherAttributes.map(\.line)
        for section in media { lines += section.lines }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    static func transportLines(
        ufrag: String?, pwd: String?, options: [String], fingerprints: [Fingerprint], setup: SetupRole?
    ) -> [String] {
        var lines: [String] = []
        if let ufrag { lines.append("a=ice-ufrag:\(ufrag)") }
        if let pwd { lines.append("a=ice-pwd:\(pwd)") }
        if !options.isEmpty { lines.append("a=ice-options:\(options.joined(separator: " "))") }
        lines += fingerprints.map { "a=fingerprint:\($0)" }
        if let setup { lines.append("a=setup:\(setup.rawValue)") }
        return lines
    }
}

extension MediaDescription {
    var lines: [String] {
        var lines = [([kind, "\(port)", proto] + formats).joined(separator: " ")].map { "m=\($0)" }
        if let connection { lines.append("c=\(connection)") }
        lines += bandwidths.map { "b=\($0)" }
        if let rtcp { lines.append("a=rtcp:\(rtcp)") }
        lines += SessionDescription.transportLines(
            ufrag: iceUfrag, pwd: icePwd, options: iceOptions, fingerprints: fingerprints, setup: setup)
        if let mid { lines.append("a=mid:\(mid)") }
        for item in headerExtensions {
            let id = item.direction.map { "\(item.id)/\($0.rawValue)" } ?? "\(item.id)"
            lines.append("a=extmap:\(id) \(item.uri)" + (item.attributes.map { " \($0)" } ?? ""))
        }
        if let direction { lines.append("a=\(direction.rawValue)") }
        if let msid { lines.append("a=msid:\(msid)") }
        if rtcpMux { lines.append("a=rtcp-mux") }
        if rtcpReducedSize { lines.append("a=rtcp-rsize") }
        for codec in codecs {
            let channels = codec.channels.map { "/\($0)" } ?? ""
            lines.append("a=rtpmap:\(codec.payloadType) \(codec.name)/\(codec.clockRate)\(channels)")
            lines += codec.feedback.map { "a=rtcp-fb:\(codec.payloadType) \($0)" }
            if let parameters = codec.parameters { lines.append("a=fmtp:\(codec.payloadType) \(parameters)") }
        }
        for group in ssrcGroups {
            lines.append((["a=ssrc-group:\(group.semantics)"] + group.ssrcs.map(String.init)).joined(separator: " "))
        }
        for item in ssrcs {
            let value = item.value.map { ":\($0)" } ?? ""
            lines.append(
                item.attribute.isEmpty ? "a=ssrc:\(item.ssrc)" : "a=ssrc:\(item.ssrc) \(item.attribute)\(value)")
        }
        if let sctpPort { lines.append("a=sctp-port:\(sctpPort)") }
        if let maxMessageSize { lines.append("a=max-message-size:\(maxMessageSize)") }
        lines += otherAttributes.map(\.line)
        lines += candidates.map { "a=\($0)" }
        if endOfCandidates { lines.append("a=end-of-candidates") }
        return lines
    }
}
