/// How a data channel delivers (RFC 8831 §6.1, RFC 8832 §5.1).
public struct DataChannelParameters: Equatable, Sendable {
    /// The channel's name, as the application chose it (DCEP label).
    public var label: String
    /// The subprotocol the application runs on the channel (DCEP protocol), empty if none.
    public var `protocol`: String
    /// Whether messages arrive in the order they were sent.
    public var ordered: Bool
    /// Partial reliability: give up after this many retransmissions…
    public var maxRetransmits: UInt32?
    /// …or after this many milliseconds. At most one of the two.
    public var maxLifetimeMilliseconds: UInt32?
    /// A pre-negotiated channel (`negotiated: true`) on this stream id: no DCEP.
    public var negotiatedId: UInt16?
    /// The DCEP priority (256: normal); carried, not acted on.
    public var priority: UInt16

    /// A reliable, ordered channel unless told otherwise.
    public init(
        label: String, protocol: String = "", ordered: Bool = true, maxRetransmits: UInt32? = nil,
        maxLifetimeMilliseconds: UInt32? = nil, negotiatedId: UInt16? = nil, priority: UInt16 = 256
    ) {
        self.label = label
        self.protocol = `protocol`
        self.ordered = ordered
        self.maxRetransmits = maxRetransmits
        self.maxLifetimeMilliseconds = maxLifetimeMilliseconds
        self.negotiatedId = negotiatedId
        self.priority = priority
    }

    /// Whether every message is retransmitted until it arrives.
    public var isReliable: Bool { maxRetransmits == nil && maxLifetimeMilliseconds == nil }

    /// The DCEP channel type byte.
    var channelType: UInt8 {
        let unordered: UInt8 = ordered ? 0 : 0x80
        if maxRetransmits != nil { return 0x01 | unordered }
        if maxLifetimeMilliseconds != nil { return 0x02 | unordered }
        return unordered
    }

    var reliabilityParameter: UInt32 { maxRetransmits ?? maxLifetimeMilliseconds ?? 0 }
}

/// SCTP payload protocol identifiers for WebRTC (RFC 8831 §8).
public enum Ppid: UInt32, Sendable {
    case dcep = 50
    case string = 51
    case binary = 53
    case emptyString = 56
    case emptyBinary = 57
}

/// Data channel establishment protocol messages (RFC 8832 §5).
enum DcepMessage: Equatable {
    case open(DataChannelParameters)
    case ack

    static let openType: UInt8 = 0x03
    static let ackType: UInt8 = 0x02

    func encoded() -> [UInt8] {
        switch self {
        case .ack:
            return [Self.ackType]
        case .open(let parameters):
            let label = Array(parameters.label.utf8)
            let proto = Array(parameters.protocol.utf8)
            var bytes: [UInt8] = [Self.openType, parameters.channelType]
            bytes += [UInt8(parameters.priority >> 8), UInt8(parameters.priority & 0xFF)]
            let reliability = parameters.reliabilityParameter
            bytes += [24, 16, 8, 0].map { UInt8((reliability >> $0) & 0xFF) }
            bytes += [UInt8(label.count >> 8 & 0xFF), UInt8(label.count & 0xFF)]
            bytes += [UInt8(proto.count >> 8 & 0xFF), UInt8(proto.count & 0xFF)]
            return bytes + label + proto
        }
    }

    /// nil for a message that is not valid DCEP.
    init?(_ bytes: [UInt8]) {
        guard let type = bytes.first else { return nil }
        if type == Self.ackType {
            self = .ack
            return
        }
        guard type == Self.openType, bytes.count >= 12 else { return nil }
        let channelType = bytes[1]
        let priority = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        let reliability = bytes[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let labelLength = Int(bytes[8]) << 8 | Int(bytes[9])
        let protocolLength = Int(bytes[10]) << 8 | Int(bytes[11])
        guard bytes.count == 12 + labelLength + protocolLength,
            let label = String(validating: bytes[12..<12 + labelLength], as: UTF8.self),
            let proto = String(validating: bytes[(12 + labelLength)...], as: UTF8.self)
        else { return nil }
        let kind = channelType & 0x7F
        guard kind <= 2 else { return nil }
        self = .open(
            DataChannelParameters(
                label: label, protocol: proto, ordered: channelType & 0x80 == 0,
                maxRetransmits: kind == 1 ? reliability : nil, maxLifetimeMilliseconds: kind == 2 ? reliability : nil,
                priority: priority))
    }
}
