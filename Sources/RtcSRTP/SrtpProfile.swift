/// The SRTP protection profiles this stack negotiates through DTLS
/// (RFC 5764 §4.1.2, RFC 7714 §14.2), with their key and salt sizes.
public enum SrtpProfile: UInt16, Sendable, CaseIterable, CustomStringConvertible {
    case aes128CmHmacSha1_80 = 0x0001
    case aeadAes128Gcm = 0x0007

    /// The name OpenSSL's `SSL_CTX_set_tlsext_use_srtp` takes.
    public var openSSLName: String {
        switch self {
        case .aes128CmHmacSha1_80: "SRTP_AES128_CM_SHA1_80"
        case .aeadAes128Gcm: "SRTP_AEAD_AES_128_GCM"
        }
    }

    /// Master key bytes (AES-128 for both profiles).
    public var keyLength: Int { 16 }
    /// Master salt bytes: 14 for AES-CM, 12 for AES-GCM.
    public var saltLength: Int {
        switch self {
        case .aes128CmHmacSha1_80: 14
        case .aeadAes128Gcm: 12
        }
    }

    /// The profile's OpenSSL name.
    public var description: String { openSSLName }

    /// Bytes to export from the DTLS session: two keys and two salts (RFC 5764 §4.2).
    public var keyingMaterialLength: Int { 2 * (keyLength + saltLength) }
}

/// The two directions' master keys split from DTLS keying material
/// (`client key | server key | client salt | server salt`, RFC 5764 §4.2).
public struct SrtpKeys: Equatable, Sendable {
    /// The key this side protects with.
    public var localKey: [UInt8]
    /// The salt this side protects with.
    public var localSalt: [UInt8]
    /// The key the peer protects with (we unprotect with it).
    public var remoteKey: [UInt8]
    /// The salt the peer protects with.
    public var remoteSalt: [UInt8]

    /// Splits exported keying material; nil if its length does not fit the profile. The DTLS client's keys come first.
    public init?(keyingMaterial material: [UInt8], profile: SrtpProfile, isClient: Bool) {
        let key = profile.keyLength
        let salt = profile.saltLength
        guard material.count == profile.keyingMaterialLength else { return nil }
        let clientKey = Array(material[0..<key])
        let serverKey = Array(material[key..<2 * key])
        let clientSalt = Array(material[2 * key..<2 * key + salt])
        let serverSalt = Array(material[2 * key + salt..<2 * key + 2 * salt])
        (localKey, localSalt) = isClient ? (clientKey, clientSalt) : (serverKey, serverSalt)
        (remoteKey, remoteSalt) = isClient ? (serverKey, serverSalt) : (clientKey, clientSalt)
    }
}
