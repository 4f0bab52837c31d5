/// A read-only view of one STUN message (RFC 8489 §5) as TURN (RFC 8656)
/// uses it, for the guards between libnice and a TURN server
/// (`TurnBridge`): what it is, whom it names as a
/// peer, and its error code. Bytes come from libnice or from the server and
/// are checked before any field is read; nothing here trusts a length.
struct TurnMessage {
    let bytes: [UInt8]
    /// The STUN method (12 bits) and class.
    let method: UInt16
    let messageClass: MessageClass

    enum MessageClass: UInt16 {
        case request = 0
        case indication = 1
        case success = 2
        case error = 3
    }

    /// RFC 8656 §18 methods.
    static let allocate: UInt16 = 0x003
    static let refresh: UInt16 = 0x004
    static let send: UInt16 = 0x006
    static let createPermission: UInt16 = 0x008
    static let channelBind: UInt16 = 0x009

    /// Attribute types (RFC 8489 §18.3, RFC 8656 §18).
    static let errorCode: UInt16 = 0x0009
    static let xorPeerAddress: UInt16 = 0x0012
    static let xorRelayedAddress: UInt16 = 0x0016

    static let magicCookie: [UInt8] = [0x21, 0x12, 0xA4, 0x42]
    static let headerSize = 20

    /// Nil unless `bytes` is one whole STUN message with the magic cookie.
    init?(_ bytes: [UInt8]) {
        guard bytes.count >= Self.headerSize, bytes[0] & 0xC0 == 0, Array(bytes[4..<8]) == Self.magicCookie else {
            return nil
        }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard length % 4 == 0, Self.headerSize + length == bytes.count else { return nil }
        let type = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        self.bytes = bytes
        method = (type & 0x000F) | ((type & 0x00E0) >> 1) | ((type & 0x3E00) >> 2)
        messageClass = MessageClass(rawValue: ((type >> 4) & 1) | ((type >> 7) & 2)) ?? .request
    }

    /// Each attribute as (type, offset of its value, length), in order; stops
    /// at the first that overruns the message.
    var attributes: [(type: UInt16, offset: Int, length: Int)] {
        var found: [(UInt16, Int, Int)] = []
        var offset = Self.headerSize
        while offset + 4 <= bytes.count {
            let type = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard offset + 4 + length <= bytes.count else { break }
            found.append((type, offset + 4, length))
            offset += 4 + (length + 3) & ~3
        }
        return found
    }

    /// The value of the first attribute of `type`.
    func value(of type: UInt16) -> ArraySlice<UInt8>? {
        attributes.first { $0.type == type }.map { bytes[$0.offset..<$0.offset + $0.length] }
    }

    /// Every XOR-PEER-ADDRESS, as the peer's IP address bytes (4 or 16).
    var peerAddresses: [[UInt8]] {
        attributes.filter { $0.type == Self.xorPeerAddress }.compactMap {
            xorAddress(bytes[$0.offset..<$0.offset + $0.length])
        }
    }

    /// RFC 8489 §14.2: the family byte, the port and the address, XORed with
    /// the cookie (and, for IPv6, the transaction id).
    private func xorAddress(_ value: ArraySlice<UInt8>) -> [UInt8]? {
        let value = Array(value)
        guard value.count >= 8 else { return nil }
        let mask = Self.magicCookie + Array(bytes[8..<20])
        switch value[1] {
        case 1: return (0..<4).map { value[4 + $0] ^ mask[$0] }
        case 2 where value.count >= 20: return (0..<16).map { value[4 + $0] ^ mask[$0] }
        default: return nil
        }
    }

    /// The XOR-RELAYED-ADDRESS of an Allocate answer, as `address:port`
    /// the way candidate lines write it.
    var relayedAddress: String? {
        guard let value = value(of: Self.xorRelayedAddress), value.count >= 4, let ip = xorAddress(value) else {
            return nil
        }
        let start = value.startIndex
        let port = (UInt16(value[start + 2]) << 8 | UInt16(value[start + 3])) ^ 0x2112
        let text =
            ip.count == 4
            ? ip.map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(ip[$0]) << 8 | UInt16(ip[$0 + 1]), radix: 16) }
                .joined(separator: ":")
        return "\(text):\(port)"
    }

    /// The ERROR-CODE's number (RFC 8489 §14.8), for an error response.
    var errorNumber: Int? {
        guard let value = value(of: Self.errorCode), value.count >= 4 else { return nil }
        let start = value.startIndex
        return Int(value[start + 2] & 0x07) * 100 + Int(value[start + 3])
    }

    /// The transaction id (bytes 8 to 20), which pairs an answer with its request.
    var transactionId: [UInt8] { Array(bytes[8..<20]) }

    /// The length of the frame at the start of a TURN-over-TCP stream
    /// (RFC 8656 §12.5): a STUN message, or ChannelData padded to 4 bytes;
    /// nil until its header is there, 0 if the bytes are neither.
    static func frameLength(_ stream: ArraySlice<UInt8>) -> Int? {
        guard stream.count >= 4 else { return nil }
        let start = stream.startIndex
        let length = Int(stream[start + 2]) << 8 | Int(stream[start + 3])
        switch stream[start] >> 6 {
        case 0: return headerSize + length
        case 1: return 4 + (length + 3) & ~3
        default: return 0
        }
    }
}
