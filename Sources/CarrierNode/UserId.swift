import CarrierWire

/// A node's permanent identity: its 32-byte X25519 public key, written in
/// base58 (wire notes §8.1). Friends, messages and invites address it.
public struct UserId: Hashable, Sendable, CustomStringConvertible, Codable {
    /// Bytes in a public key.
    public static let keySize = 32
    /// The identity's public key (Curve25519).
    public let publicKey: [UInt8]

    /// A user id from a 32-byte key; nil for any other size.
    public init?(publicKey: some Collection<UInt8>) {
        guard publicKey.count == Self.keySize else { return nil }
        self.publicKey = Array(publicKey)
    }

    /// Parses base58 text; nil unless it decodes to exactly 32 bytes.
    public init?(_ text: String) {
        guard let bytes = Base58.decode(text) else { return nil }
        self.init(publicKey: bytes)
    }

    /// Whether `text` is a base58 user id.
    public static func isValid(_ text: String) -> Bool { UserId(text) != nil }

    /// The user id in base58.
    public var description: String { Base58.encode(publicKey) }

    /// The key's bytes in one piece: an array hashes element by element, and
    /// toxcore's path looks a transfer up by friend for every chunk.
    public func hash(into hasher: inout Hasher) {
        publicKey.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// Decodes a base58 string.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = UserId(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not a user id: \(text)"))
        }
        self = id
    }

    /// Encodes as a base58 string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
