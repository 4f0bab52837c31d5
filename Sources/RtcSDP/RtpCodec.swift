/// One payload format of an RTP media section: `a=rtpmap`, `a=fmtp` and `a=rtcp-fb` for a payload type.
public struct RtpCodec: Equatable, Sendable {
    public var payloadType: UInt8
    /// Encoding name as written (`opus`, `VP8`, `rtx`, ...); compare with `name.lowercased()`.
    public var name: String
    public var clockRate: UInt32
    /// Audio channels (`opus/48000/2`); nil when absent.
    public var channels: Int?
    /// The fmtp parameter string, as written (`minptime=10;useinbandfec=1`).
    public var parameters: String?
    /// `a=rtcp-fb` values for this payload type (`nack`, `nack pli`, `ccm fir`, `goog-remb`, ...).
    public var feedback: [String]

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
    public var id: Int
    public var direction: Direction?
    public var uri: String
    public var attributes: String?

    public init(id: Int, direction: Direction? = nil, uri: String, attributes: String? = nil) {
        self.id = id
        self.direction = direction
        self.uri = uri
        self.attributes = attributes
    }
}

/// `a=ssrc:<ssrc> <attribute>[:<value>]` (RFC 5576).
public struct SsrcAttribute: Equatable, Sendable {
    public var ssrc: UInt32
    public var attribute: String
    public var value: String?

    public init(ssrc: UInt32, attribute: String, value: String? = nil) {
        self.ssrc = ssrc
        self.attribute = attribute
        self.value = value
    }
}

/// `a=ssrc-group:<semantics> <ssrc>...` (FID for RTX, SIM for simulcast).
public struct SsrcGroup: Equatable, Sendable {
    public var semantics: String
    public var ssrcs: [UInt32]

    public init(semantics: String, ssrcs: [UInt32]) {
        self.semantics = semantics
        self.ssrcs = ssrcs
    }
}

/// Any attribute the model does not hold in a field, kept in order so it
/// survives a round trip.
public struct Attribute: Equatable, Sendable {
    public var name: String
    public var value: String?

    public init(_ name: String, _ value: String? = nil) {
        self.name = name
        self.value = value
    }

    var line: String { value.map { "a=\(name):\($0)" } ?? "a=\(name)" }
}
