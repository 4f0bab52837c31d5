/// Which protocol a datagram on a WebRTC ICE component carries, by its first
/// byte (RFC 7983 §7): STUN 0-3, DTLS 20-63, RTP/RTCP 128-191.
public enum PacketClass: Sendable, Equatable {
    case stun, dtls, rtp, unknown

    /// Classifies a datagram by its first byte.
    public init(_ datagram: [UInt8]) {
        guard let first = datagram.first else {
            self = .unknown
            return
        }
        switch first {
        case 0...3: self = .stun
        case 20...63: self = .dtls
        case 128...191: self = .rtp
        default: self = .unknown
        }
    }
}
