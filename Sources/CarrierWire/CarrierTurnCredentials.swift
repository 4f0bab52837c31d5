import CSodium

/// TURN credentials the Carrier way (wire notes §4): a Carrier bootstrap
/// node runs a patched coturn on port 3478 that accepts, for a user, the
/// password `base58(HMAC-SHA256(key = crypto_box_beforenm(relay key, user's
/// secret key), message = a 24-byte nonce))` with the username
/// `<userid>@<base58(nonce)>.auth.tox`, realm `elastos.org`. Both sides can
/// compute it; nothing expires (any fresh nonce works), which is the
/// network's design, not ours to fix here: our own deployments use
/// Express's time-limited REST credentials instead.
public struct CarrierTurnCredentials: Equatable, Sendable {
    /// The relay's IPv4 address (a bootstrap node that is our TCP relay).
    public var server: String
    /// The TURN port (3478).
    public var port: UInt16
    /// The realm (`elastos.org`).
    public var realm: String
    /// `<userid>@<base58(nonce)>.auth.tox`.
    public var username: String
    /// Never logged.
    public var password: String

    /// Where a Carrier bootstrap runs its TURN server.
    public static let port: UInt16 = 3478
    /// The network's TURN realm.
    public static let realm = "elastos.org"
    /// Bytes of the nonce in the username (a box nonce's size, drawn the same way).
    public static let nonceSize = CarrierExpress.nonceSize

    /// Credentials for the holder of `secretKey` on the relay with
    /// `relayPublicKey` at `server`, with `nonce` (24 random bytes: give
    /// fresh ones, `randomNonce()`). Nil for keys of the wrong size or that
    /// X25519 refuses.
    public static func derive(secretKey: [UInt8], relayPublicKey: [UInt8], server: String, nonce: [UInt8])
        -> CarrierTurnCredentials?
    {
        guard secretKey.count == 32, relayPublicKey.count == 32, nonce.count == nonceSize else { return nil }
        var publicKey = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult_curve25519_base(&publicKey, secretKey) == 0,
            let password = password(secretKey: secretKey, peerPublicKey: relayPublicKey, nonce: nonce)
        else { return nil }
        return CarrierTurnCredentials(
            server: server, port: port, realm: realm,
            username: Base58.encode(publicKey) + "@" + Base58.encode(nonce) + ".auth.tox", password: password)
    }

    /// The password a relay expects for `username`, as its coturn computes
    /// it (with the relay's secret key and the user's public key from the
    /// name); nil for a name not of the form `<userid>@<nonce>.auth.tox`.
    public static func expectedPassword(username: String, relaySecretKey: [UInt8]) -> String? {
        let parts = username.split(separator: "@", maxSplits: 1)
        guard parts.count == 2, parts[1].hasSuffix(".auth.tox"),
            let user = Base58.decode(String(parts[0])), user.count == 32,
            let nonce = Base58.decode(String(parts[1].dropLast(".auth.tox".count))), nonce.count == nonceSize
        else { return nil }
        return password(secretKey: relaySecretKey, peerPublicKey: user, nonce: nonce)
    }

    /// 24 random bytes for `derive`.
    public static func randomNonce() -> [UInt8] { CarrierExpress.randomNonce() }

    private static func password(secretKey: [UInt8], peerPublicKey: [UInt8], nonce: [UInt8]) -> String? {
        guard var shared = CarrierExpress.sharedKey(secretKey: secretKey, publicKey: peerPublicKey) else { return nil }
        defer { sodium_memzero(&shared, shared.count) }
        var mac = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        var state = crypto_auth_hmacsha256_state()
        crypto_auth_hmacsha256_init(&state, shared, shared.count)
        crypto_auth_hmacsha256_update(&state, nonce, UInt64(nonce.count))
        crypto_auth_hmacsha256_final(&state, &mac)
        return Base58.encode(mac)
    }
}
