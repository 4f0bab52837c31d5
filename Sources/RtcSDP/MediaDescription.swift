/// One `m=` section: its transport parameters, its payload formats and what
/// it sends (RFC 8866 §5.14, RFC 8829 for the WebRTC attributes).
public struct MediaDescription: Equatable, Sendable {
    /// `audio`, `video` or `application`.
    public var kind: String
    /// The m-line's port: 9 with ICE, 0 for a rejected section.
    public var port: UInt16
    /// `UDP/TLS/RTP/SAVPF`, `UDP/DTLS/SCTP`, `DTLS/SCTP`, ...
    public var proto: String
    /// The format list of the m-line: payload types for RTP, `webrtc-datachannel` for SCTP.
    public var formats: [String]
    /// The `c=` line's value, if the section has one.
    public var connection: String?
    /// `b=` lines, as written.
    public var bandwidths: [String] = []

    /// `a=mid`: the section's id within the session (RFC 8843).
    public var mid: String?
    /// `a=sendrecv`, `sendonly`, `recvonly` or `inactive`.
    public var direction: Direction?
    /// `a=msid`: the stream and track ids, as written.
    public var msid: String?
    /// `a=rtcp`, as written.
    public var rtcp: String?
    /// `a=rtcp-mux`: RTCP on the RTP port (WebRTC requires it).
    public var rtcpMux = false
    /// `a=rtcp-rsize` (RFC 5506).
    public var rtcpReducedSize = false

    /// `a=ice-ufrag` of this section.
    public var iceUfrag: String?
    /// `a=ice-pwd` of this section.
    public var icePwd: String?
    /// `a=ice-options` (`trickle`, `ice2`, …).
    public var iceOptions: [String] = []
    /// `a=fingerprint` lines of this section.
    public var fingerprints: [Fingerprint] = []
    /// `a=setup`: which side starts DTLS.
    public var setup: SetupRole?
    /// `a=candidate` lines.
    public var candidates: [Candidate] = []
    /// `a=end-of-candidates`: no more will trickle.
    public var endOfCandidates = false

    /// The payload formats, in the m-line's order.
    public var codecs: [RtpCodec] = []
    /// `a=extmap` lines.
    public var headerExtensions: [HeaderExtension] = []
    /// `a=ssrc` lines.
    public var ssrcs: [SsrcAttribute] = []
    /// `a=ssrc-group` lines.
    public var ssrcGroups: [SsrcGroup] = []

    /// `a=sctp-port` (RFC 8841) and `a=max-message-size` (bytes; 0 means no limit).
    public var sctpPort: UInt16?
    /// (See `sctpPort`.)
    public var maxMessageSize: UInt64?

    /// Every other attribute, in order, so that it survives a round trip.
    public var otherAttributes: [Attribute] = []

    /// A section with its m-line and nothing else yet.
    public init(kind: String, port: UInt16 = 9, proto: String, formats: [String]) {
        self.kind = kind
        self.port = port
        self.proto = proto
        self.formats = formats
    }

    /// Whether it is an SCTP (data channel) section.
    public var isDataChannel: Bool { proto.uppercased().hasSuffix("SCTP") }
    /// A rejected section (port 0 in an answer).
    public var isRejected: Bool { port == 0 && !attribute("bundle-only").isPresent }

    /// The codec of a payload type, if the section has it.
    public func codec(payloadType: UInt8) -> RtpCodec? { codecs.first { $0.payloadType == payloadType } }

    /// The SSRCs this section sends, in order of appearance.
    public var sendingSsrcs: [UInt32] {
        var seen: [UInt32] = []
        for item in ssrcs where !seen.contains(item.ssrc) { seen.append(item.ssrc) }
        return seen
    }

    /// An attribute kept in `otherAttributes`: whether it is there, and its value.
    public func attribute(_ name: String) -> (isPresent: Bool, value: String?) {
        guard let found = otherAttributes.first(where: { $0.name == name }) else { return (false, nil) }
        return (true, found.value)
    }
}
