import CarrierWire

/// The shareable address that a friend request goes to: public key, nospam and
/// a 2-byte checksum, 38 bytes in base58 (wire notes §8.1).
///
/// Layout: `pk(32) || nospam(4, big-endian) || checksum(2)` where
/// `checksum[0]` XORs the bytes at even indices 0...34 and `checksum[1]`
/// the bytes at odd indices 1...35.
public struct CarrierAddress: Hashable, Sendable, CustomStringConvertible {
    /// Bytes in an address: key (32), nospam (4), checksum (2).
    public static let size = 38
    /// Whose address it is.
    public let userId: UserId
    /// The nospam: changing it stops requests to the old address.
    public let nospam: UInt32

    /// An address from its parts (the checksum is computed).
    public init(userId: UserId, nospam: UInt32) {
        self.userId = userId
        self.nospam = nospam
    }

    /// Parses an address from its 38 bytes; nil if the length or checksum is wrong.
    public init?(bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard bytes.count == Self.size,
            Self.checksum(bytes[0..<36]) == [bytes[36], bytes[37]],
            let userId = UserId(publicKey: bytes[0..<32])
        else { return nil }
        self.userId = userId
        self.nospam = bytes[32..<36].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Parses base58 text; nil unless it decodes to 38 bytes with a valid checksum.
    public init?(_ text: String) {
        guard let bytes = Base58.decode(text) else { return nil }
        self.init(bytes: bytes)
    }

    /// Whether `text` is a base58 address with a good checksum.
    public static func isValid(_ text: String) -> Bool { CarrierAddress(text) != nil }

    /// The user id inside an address, or nil if the address is invalid.
    public static func userId(fromAddress text: String) -> UserId? { CarrierAddress(text)?.userId }

    /// The 38 bytes: key, nospam, checksum.
    public var bytes: [UInt8] {
        var bytes = userId.publicKey
        bytes += [UInt8(nospam >> 24), UInt8((nospam >> 16) & 0xFF), UInt8((nospam >> 8) & 0xFF), UInt8(nospam & 0xFF)]
        return bytes + Self.checksum(bytes[...])
    }

    /// The address in base58.
    public var description: String { Base58.encode(bytes) }

    static func checksum(_ body: ArraySlice<UInt8>) -> [UInt8] {
        var sum: [UInt8] = [0, 0]
        for (offset, byte) in body.enumerated() { sum[offset % 2] ^= byte }
        return sum
    }
}
