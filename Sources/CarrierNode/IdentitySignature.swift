import AsyncExtras
import COpenSSL
import CSodium

/// Identity signatures with the node's X25519 key: the curve25519-sign
/// convention (XEdDSA with the Ed25519 sign bit carried in the top bit of
/// signature byte 63), byte-compatible with the Carrier AgentNet fork and
/// curve25519-js (wire notes §8.3). Verification needs only a user id.
public enum IdentitySignature {
    /// Bytes in a signature.
    public static let signatureSize = 64
    /// Bytes in the identity's secret key.
    public static let secretKeySize = 32

    /// Why a message could not be signed.
    public enum SignError: Error, Equatable, CustomStringConvertible {
        case emptyMessage
        case badSecretKey
        case badRandom

        /// What went wrong, in words for a log or a user.
        public var description: String {
            switch self {
            case .emptyMessage: "refusing to sign an empty message"
            case .badSecretKey: "the secret key must be 32 bytes"
            case .badRandom: "the signing randomness must be 64 bytes"
            }
        }
    }

    /// Signs `message` with a fresh 64-byte random Z.
    public static func sign(message: [UInt8], secretKey: [UInt8]) throws(SignError) -> [UInt8] {
        var random = [UInt8](repeating: 0, count: 64)
        randombytes_buf(&random, 64)
        return try sign(message: message, secretKey: secretKey, random: random)
    }

    /// Deterministic signing with a given Z, for the test vectors.
    public static func sign(message: [UInt8], secretKey: [UInt8], random: [UInt8]) throws(SignError) -> [UInt8] {
        try IdentitySigner(secretKey: secretKey).sign(message: message, random: random)
    }

    /// Checks a signature against an X25519 public key.
    public static func verify(message: [UInt8], signature: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureSize, publicKey.count == 32,
            var edwardsKey = cachedEdwardsY(fromMontgomeryU: publicKey)
        else { return false }
        _ = sodium_init()
        edwardsKey[31] |= signature[63] & 0x80
        var plain = signature
        plain[63] &= 0x7F
        return crypto_sign_ed25519_verify_detached(plain, message, UInt64(message.count), edwardsKey) == 0
    }

    /// Whether `signature` is `userId`'s over `message`.
    public static func verify(message: [UInt8], signature: [UInt8], userId: UserId) -> Bool {
        verify(message: message, signature: signature, publicKey: userId.publicKey)
    }

    /// The X25519 public key for a secret key.
    public static func publicKey(secretKey: [UInt8]) -> [UInt8]? {
        guard secretKey.count == secretKeySize else { return nil }
        _ = sodium_init()
        var publicKey = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult_curve25519_base(&publicKey, secretKey) == 0 else { return nil }
        return publicKey
    }

    /// Conversions already made: an Express node verifies the same users'
    /// requests again and again, and the field inversion was a tenth of its
    /// time. Bounded: emptied when it passes 4096 keys.
    private static let edwardsKeys = Locked<[[UInt8]: [UInt8]]>([:])

    static func cachedEdwardsY(fromMontgomeryU publicKey: [UInt8]) -> [UInt8]? {
        if let known = edwardsKeys.withLock({ $0[publicKey] }) { return known }
        guard let converted = edwardsY(fromMontgomeryU: publicKey) else { return nil }
        edwardsKeys.withLock {
            if $0.count >= 4096 { $0.removeAll() }
            $0[publicKey] = converted
        }
        return converted
    }

    /// y = (u - 1) / (u + 1) mod 2^255 - 19, little-endian, sign bit clear.
    /// libsodium keeps its field arithmetic private, so OpenSSL's BIGNUM does it.
    static func edwardsY(fromMontgomeryU publicKey: [UInt8]) -> [UInt8]? {
        var u = publicKey
        u[31] &= 0x7F
        guard let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        let p = BN_new()
        let bnU = BN_lebin2bn(u, 32, nil)
        let one = BN_new()
        let numerator = BN_new()
        let denominator = BN_new()
        let inverse = BN_new()
        let y = BN_new()
        defer { for number in [p, bnU, one, numerator, denominator, inverse, y] { BN_free(number) } }
        guard let p, let bnU, let one, let numerator, let denominator, let inverse, let y else { return nil }
        // p = 2^255 - 19
        guard BN_set_word(one, 1) == 1, BN_lshift(p, one, 255) == 1, BN_sub_word(p, 19) == 1,
            BN_mod_sub(numerator, bnU, one, p, context) == 1,
            BN_mod_add(denominator, bnU, one, p, context) == 1,
            BN_mod_inverse(inverse, denominator, p, context) != nil,
            BN_mod_mul(y, numerator, inverse, p, context) == 1
        else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        guard BN_bn2lebinpad(y, &out, 32) == 32 else { return nil }
        return out
    }
}

/// An identity key ready to sign many messages (an Express node signs every
/// answer): the clamped scalar, its reduction and its Edwards public point are
/// computed once instead of for every signature. The secret values live in
/// memory of their own (`SecretBytes`), wiped when the last copy of the signer
/// goes; each signature's secret intermediates (the nonce r, h·a) are wiped
/// before `sign` returns.
public struct IdentitySigner: Sendable {
    /// The clamped scalar a, then a mod L (32 bytes each).
    private let secret: SecretBytes
    private let publicPoint: [UInt8]

    /// Prepares `secretKey` (32 bytes) for signing.
    public init(secretKey: [UInt8]) throws(IdentitySignature.SignError) {
        guard secretKey.count == IdentitySignature.secretKeySize else { throw .badSecretKey }
        _ = sodium_init()
        let secret = SecretBytes(count: 64)
        var point = [UInt8](repeating: 0, count: 32)
        secret.with { bytes in
            for index in 0..<32 { bytes[index] = secretKey[index] }
            bytes[0] &= 248
            bytes[31] &= 127
            bytes[31] |= 64
            _ = crypto_scalarmult_ed25519_base_noclamp(&point, bytes)
            // a mod L, for s = r + h·a: the 32-byte scalar widened to 64 bytes, reduced.
            var wide = [UInt8](repeating: 0, count: 64)
            for index in 0..<32 { wide[index] = bytes[index] }
            crypto_core_ed25519_scalar_reduce(bytes + 32, wide)
            Self.wipe(&wide)
        }
        self.secret = secret
        publicPoint = point
    }

    /// Signs `message` with a fresh 64-byte random Z.
    public func sign(message: [UInt8]) throws(IdentitySignature.SignError) -> [UInt8] {
        var random = [UInt8](repeating: 0, count: 64)
        randombytes_buf(&random, 64)
        defer { Self.wipe(&random) }
        return try sign(message: message, random: random)
    }

    /// Signs with a given Z (the test vectors).
    func sign(message: [UInt8], random: [UInt8]) throws(IdentitySignature.SignError) -> [UInt8] {
        guard !message.isEmpty else { throw .emptyMessage }
        guard random.count == 64 else { throw .badRandom }
        return secret.with { bytes in
            let a = UnsafeBufferPointer(start: bytes, count: 32)
            let aReduced = bytes + 32
            // r = SHA512(0xFE || 0xFF*31 || a || msg || Z) mod L
            let prefix: [UInt8] = [0xFE] + [UInt8](repeating: 0xFF, count: 31)
            var digest = Self.sha512(prefix, a, message, random)
            var r = [UInt8](repeating: 0, count: 32)
            crypto_core_ed25519_scalar_reduce(&r, digest)
            var nonce = [UInt8](repeating: 0, count: 32)
            _ = crypto_scalarmult_ed25519_base_noclamp(&nonce, r)

            // h = SHA512(R || A || msg) mod L; s = r + h*a mod L
            let hDigest = Self.sha512(nonce, publicPoint, message)
            var h = [UInt8](repeating: 0, count: 32)
            crypto_core_ed25519_scalar_reduce(&h, hDigest)
            var ha = [UInt8](repeating: 0, count: 32)
            crypto_core_ed25519_scalar_mul(&ha, h, aReduced)
            var s = [UInt8](repeating: 0, count: 32)
            crypto_core_ed25519_scalar_add(&s, r, ha)
            Self.wipe(&digest)
            Self.wipe(&r)
            Self.wipe(&ha)

            var signature = nonce + s
            signature[63] |= publicPoint[31] & 0x80
            return signature
        }
    }

    private static func sha512(_ parts: any Sequence<UInt8>...) -> [UInt8] {
        var state = crypto_hash_sha512_state()
        crypto_hash_sha512_init(&state)
        for part in parts {
            let bytes = part.withContiguousStorageIfAvailable { buffer in
                crypto_hash_sha512_update(&state, buffer.baseAddress, UInt64(buffer.count))
            }
            precondition(bytes != nil, "contiguous input")
        }
        var digest = [UInt8](repeating: 0, count: 64)
        crypto_hash_sha512_final(&state, &digest)
        return digest
    }

    private static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
    }
}

/// Secret bytes in memory of their own, wiped (`sodium_memzero`) when the
/// last reference goes, so no copy of them lingers in a freed array.
final class SecretBytes: @unchecked Sendable {
    private let pointer: UnsafeMutablePointer<UInt8>
    private let count: Int

    init(count: Int) {
        pointer = .allocate(capacity: count)
        pointer.initialize(repeating: 0, count: count)
        self.count = count
    }

    deinit {
        sodium_memzero(pointer, count)
        pointer.deallocate()
    }

    /// Access to the bytes; written only while the owner is being made, read after.
    func with<R>(_ body: (UnsafeMutablePointer<UInt8>) throws -> R) rethrows -> R { try body(pointer) }
}
