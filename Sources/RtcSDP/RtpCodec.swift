/// One payload format of an RTP media section: `a=rtpmap`, `a=fmtp` and `a=rtcp-fb` for a payload type.
public struct RtpCodec: Equatable, Sendable {
    /// The payload type RTP packets carry for this codec.
    public var payloadType: UInt8
    /// Encoding name as written (`opus`, `VP8`, `rtx`, ...); compare with `name.lowercased()`.
    public var name: String
    /// The RTP clock rate (48000 for Opus, 90000 for video).
    public var clockRate: UInt32
    /// Audio channels (`opus/48000/2`); nil when absent.
    public var channels: Int?
    /// The fmtp parameter string, as written (`minptime=10;useinbandfec=1`).
    public var parameters: String?
    /// `a=rtcp-fb` values for this payload type (`nack`, `nack pli`, `ccm fir`, `goog-remb`, ...).
    public var feedback: [String]

    /// A codec from its rtpmap, fmtp and rtcp-fb values.
    public init(
        payloadType: UInt8, name: String, clockRate: UInt32, channels: Int? = nil, parameters: String? = nil,
        feedback: [String] = []
    ) {
        self.payloadType = payloadType
        self.name = name
        self.clockRate = clockRate
        self.channels = channels
        self.parameters = parameters
        self.feedback = feedback
    }

    /// fmtp parameters as key/value pairs (`apt=97` → ["apt": "97"]).
    public var parameterMap: [String: String] {
        var map: [String: String] = [:]
        for item in (parameters ?? "").split(separator: ";") {
            let pair = item.split(separator: "=", maxSplits: 1).map { String($0).trimmingWhitespace }
            if let key = pair.first, !key.isEmpty { map[key.lowercased()] = pair.count > 1 ? pair[1] : "" }
        }
        return map
    }
}

/// `a=extmap:<id>[/<direction>] <uri> [<attributes>]` (RFC 8285).
public struct HeaderExtension: Equatable, Sendable {
    /// The id RTP packets carry for this extension.
    public var id: Int
    /// The directions it is used in, if limited.
    public var direction: Direction?
    /// What the extension is (`urn:ietf:params:rtp-hdrext:sdes:mid`, …).
    public var uri: String
    /// Extension attributes, as written.
    public var attributes: String?

    /// An extension mapping.
    public init(id: Int, direction: Direction? = nil, uri: String, attributes: String? = nil) {
        self.id = id
        self.direction = direction
        self.uri = uri
        self.attributes = attributes
    }
}

/// `a=ssrc:<ssrc> <attribute>[:<value>]` (RFC 5576).
public struct SsrcAttribute: Equatable, Sendable {
    /// The SSRC described.
    public var ssrc: UInt32
    /// `cname`, `msid`, …
    public var attribute: String
    /// The attribute's value, if it has one.
    public var value: String?

    /// One `a=ssrc` line.
    public init(ssrc: UInt32, attribute: String, value: String? = nil) {
        self.ssrc = ssrc
        self.attribute = attribute
        self.value = value
    }
}

/// `a=ssrc-group:<semantics> <ssrc>...` (FID for RTX, SIM for simulcast).
public struct SsrcGroup: Equatable, Sendable {
    /// `FID`, `SIM`, …
    public var semantics: String
    /// The SSRCs grouped, in order.
    public var ssrcs: [UInt32]

    /// One `a=ssrc-group` line.
    public init(semantics: String, ssrcs: [UInt32]) {
        self.semantics = semantics
        self.ssrcs = ssrcs
    }
}

/// Any attribute the model does not hold in a field, kept in order so it
/// survives a round trip.
public struct Attribute: Equatable, Sendable {
    /// The attribute's name (after `a=`).
    public var name: String
    /// Its value (after `:`), if it has one.
    public var value: String?

    /// An attribute as written.
    public init(_ name: String, _ value: String? = nil) {
        self.name = name
        self.value = value
    }

    var line: String { value.map { "a=\(name):\($0)" } ?? "a=\(name)" }
}
