/// A node's permanent identity: its 32-byte X25519 public key, written in
/// base58 (wire notes §8.1). Friends, messages and invites address it.
public struct UserId: Hashable, Sendable, CustomStringConvertible, Codable {
    public static let keySize = 32
    public let publicKey: [UInt8]

    public init?(publicKey: some Collection<UInt8>) {
        guard publicKey.count == Self.keySize else { return nil }
        self.publicKey = Array(publicKey)
    }

    /// Parses base58 text; nil unless it decodes to exactly 32 bytes.
    public init?(_ text: String) {
        guard let bytes = Base58.decode(text) else { return nil }
        self.init(publicKey: bytes)
    }

    public static func isValid(_ text: String) -> Bool { UserId(text) != nil }

    public var description: String { Base58.encode(publicKey) }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = UserId(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not a user id: \(text)"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
