import RtcPeer

/// What a session's data channel is, from its DCEP protocol and label
/// (docs/sessions.md). A stream is a channel of its own; a stream's channels
/// and forwarded connections name their stream by its SCTP stream id.
enum ChannelLabel: Equatable {
    /// A stream; the label lists its options.
    case stream(SessionStream.Options)
    /// A channel inside the stream with this id, with the opener's cookie.
    case channel(stream: UInt16, cookie: String)
    /// A forwarded TCP connection to a service, inside the stream with this id.
    case forward(stream: UInt16, service: String)

    static let streamProtocol = "carrier-stream"
    static let channelProtocol = "carrier-channel"
    static let forwardProtocol = "carrier-forward"
    /// Cookies and service names are short: longer labels are refused.
    static let maxCookieBytes = 256

    var parameters: DataChannelParameters {
        switch self {
        case .stream(let options):
            var parameters = DataChannelParameters(label: options.label, protocol: Self.streamProtocol)
            if !options.contains(.reliable) {
                parameters.ordered = false
                parameters.maxRetransmits = 0
            }
            return parameters
        case .channel(let stream, let cookie):
            return DataChannelParameters(label: "\(stream)/\(cookie)", protocol: Self.channelProtocol)
        case .forward(let stream, let service):
            return DataChannelParameters(label: "\(stream)/\(service)", protocol: Self.forwardProtocol)
        }
    }

    /// Reads a channel the peer opened; nil for one that is not a session's.
    init?(_ parameters: DataChannelParameters) {
        switch parameters.protocol {
        case Self.streamProtocol:
            self = .stream(SessionStream.Options(label: parameters.label))
        case Self.channelProtocol, Self.forwardProtocol:
            let label = parameters.label
            guard let slash = label.firstIndex(of: "/"), let stream = UInt16(label[..<slash]) else { return nil }
            let name = String(label[label.index(after: slash)...])
            guard name.utf8.count <= Self.maxCookieBytes else { return nil }
            self =
                parameters.protocol == Self.channelProtocol
                ? .channel(stream: stream, cookie: name) : .forward(stream: stream, service: name)
        default:
            return nil
        }
    }
}
