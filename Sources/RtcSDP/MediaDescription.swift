/// One `m=` section: its transport parameters, its payload formats and what
/// it sends (RFC 8866 §5.14, RFC 8829 for the WebRTC attributes).
public struct MediaDescription: Equatable, Sendable {
    /// `audio`, `video` or `application`.
    public var kind: String
    public var port: UInt16
    /// `UDP/TLS/RTP/SAVPF`, `UDP/DTLS/SCTP`, `DTLS/SCTP`, ...
    public var proto: String
    /// The format list of the m-line: payload types for RTP, `webrtc-datachannel` for SCTP.
    public var formats: [String]
    public var connection: String?
    public var bandwidths: [String] = []

    public var mid: String?
    public var direction: Direction?
    public var msid: String?
    public var rtcp: String?
    public var rtcpMux = false
    public var rtcpReducedSize = false

    public var iceUfrag: String?
    public var icePwd: String?
    public var iceOptions: [String] = []
    public var fingerprints: [Fingerprint] = []
    public var setup: SetupRole?
    public var candidates: [Candidate] = []
    public var endOfCandidates = false

    public var codecs: [RtpCodec] = []
    public var headerExtensions: [HeaderExtension] = []
    public var ssrcs: [SsrcAttribute] = []
    public var ssrcGroups: [SsrcGroup] = []

    /// `a=sctp-port` (RFC 8841) and `a=max-message-size` (bytes; 0 means no limit).
    public var sctpPort: UInt16?
    public var maxMessageSize: UInt64?

    public var otherAttributes: [Attribute] = []

    public init(kind: String, port: UInt16 = 9, proto: String, formats: [String]) {
        self.kind = kind
        self.port = port
        self.proto = proto
        self.formats = formats
    }

    public var isDataChannel: Bool { proto.uppercased().hasSuffix("SCTP") }
    /// A rejected section (port 0 in an answer).
    public var isRejected: Bool { port == 0 && !attribute("bundle-only").isPresent }

    public func codec(payloadType: UInt8) -> RtpCodec? { codecs.first { $0.payloadType == payloadType } }

    /// The SSRCs this section sends, in order of appearance.
    public var sendingSsrcs: [UInt32] {
        var seen: [UInt32] = []
        for item in ssrcs where !seen.contains(item.ssrc) { seen.append(item.ssrc) }
        return seen
    }

    public func attribute(_ name: String) -> (isPresent: Bool, value: String?) {
        guard let found = otherAttributes.first(where: { $0.name == name }) else { return (false, nil) }
        return (true, found.value)
    }
}
