import CSodium

/// Who may leave messages in a recipient's Express mailbox: its friends,
/// without the Express node learning who they are until they deposit.
///
/// Two friends share an X25519 secret (toxcore's keys: `dh = X25519(mine,
/// theirs)`, the same on both sides). From it each derives, for one Express
/// node, the pair's token `SHA-256("carrier-express-contact-1" | node key |
/// dh)`. The recipient registers `SHA-256(token | sender key)` for each
/// friend (`PUT /v1/contacts`); the sender shows the token with a deposit
/// (`X-Carrier-Contact`), and the node checks that the hash of the token
/// and the authenticated sender is registered. The node learns how many
/// friends a user has, not which: a registered hash names nobody, and a
/// token says nothing without the sender that shows it. A token that leaks
/// (the node speaks plain HTTP) is of no use to anyone but that sender,
/// whose requests are signed. Friend requests need no token: they go to
/// `/v1/requests/`, small and rate-limited (docs/express.md).
public enum ExpressContact {
    /// The label the token's hash starts with.
    static let label = Array("carrier-express-contact-1".utf8)
    /// A token and a registered hash are 32 bytes.
    public static let size = 32
    /// Contacts one recipient registers at most (its friends).
    public static let maxContacts = 4096

    /// The token between the holder of `secretKey` and `peer` for the
    /// Express node with `serverKey`; nil for a key X25519 refuses.
    public static func token(secretKey: [UInt8], peer: UserId, serverKey: [UInt8]) -> [UInt8]? {
        guard secretKey.count == 32 else { return nil }
        var shared = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult_curve25519(&shared, secretKey, peer.publicKey) == 0 else { return nil }
        defer { sodium_memzero(&shared, shared.count) }
        return ExpressProtocol.sha256(label + serverKey + shared)
    }

    /// What the recipient registers for `sender`, and what the node checks a
    /// deposit's token against.
    public static func registered(token: [UInt8], sender: UserId) -> [UInt8] {
        ExpressProtocol.sha256(token + sender.publicKey)
    }

    /// The body of `PUT /v1/contacts`: the recipient's hash for each friend,
    /// 32 bytes each, sorted (so an unchanged list is the same body).
    public static func registration(secretKey: [UInt8], friends: [UserId], serverKey: [UInt8]) -> [UInt8] {
        friends.prefix(maxContacts).compactMap { friend in
            token(secretKey: secretKey, peer: friend, serverKey: serverKey).map {
                registered(token: $0, sender: friend)
            }
        }
        .sorted { $0.lexicographicallyPrecedes($1) }
        .flatMap { $0 }
    }
}
