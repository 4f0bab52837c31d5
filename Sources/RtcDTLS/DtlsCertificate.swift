import COpenSSL

/// A self-signed ECDSA P-256 certificate and its key, as WebRTC endpoints use
/// (RFC 8827 §6.5): the identity that the SDP fingerprint pins.
/// Immutable once made; OpenSSL's objects are reference-counted and read-only here.
public final class DtlsCertificate: @unchecked Sendable {
    let key: OpaquePointer  // EVP_PKEY
    let certificate: OpaquePointer  // X509

    /// The certificate's SHA-256 fingerprint, for `a=fingerprint:sha-256`.
    public let sha256: [UInt8]

    /// OpenSSL could not make the key or certificate (its error queue, as text).
    public enum CertificateError: Error, Sendable { case openSSL(String) }

    /// Generates a fresh key pair and a certificate valid from a day ago for 30 days.
    public init(commonName: String = "carrier") throws(CertificateError) {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw .openSSL(OpenSSLError.last()) }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &generated) == 1, let key = generated
        else { throw .openSSL(OpenSSLError.last()) }
        guard let x509 = X509_new() else {
            EVP_PKEY_free(key)
            throw .openSSL(OpenSSLError.last())
        }
        var serial = [UInt8](repeating: 0, count: 8)
        _ = RAND_bytes(&serial, 8)
        let name = X509_get_subject_name(x509)
        let ok =
            X509_set_version(x509, 2) == 1
            && ASN1_INTEGER_set(X509_get_serialNumber(x509), Int(serial.reduce(0) { $0 << 8 | Int($1) } & 0x7FFF_FFFF))
                == 1
            && X509_gmtime_adj(X509_getm_notBefore(x509), -86_400) != nil
            && X509_gmtime_adj(X509_getm_notAfter(x509), 30 * 86_400) != nil
            && X509_set_pubkey(x509, key) == 1
            && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1
            && X509_set_issuer_name(x509, name) == 1
            && X509_sign(x509, key, EVP_sha256()) > 0
        guard ok, let digest = Self.digest(of: x509, algorithm: "sha-256") else {
            X509_free(x509)
            EVP_PKEY_free(key)
            throw .openSSL(OpenSSLError.last())
        }
        self.key = key
        certificate = x509
        sha256 = digest
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
    }

    /// The certificate's digest with an SDP hash name (`sha-1`, `sha-256`, `sha-384`, `sha-512`).
    static func digest(of certificate: OpaquePointer, algorithm: String) -> [UInt8]? {
        let function: OpaquePointer? =
            switch algorithm.lowercased() {
            case "sha-1": EVP_sha1()
            case "sha-256": EVP_sha256()
            case "sha-384": EVP_sha384()
            case "sha-512": EVP_sha512()
            default: nil
            }
        guard let function else { return nil }
        var buffer = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(certificate, function, &buffer, &length) == 1 else { return nil }
        return Array(buffer.prefix(Int(length)))
    }
}

enum OpenSSLError {
    /// The most recent error on OpenSSL's queue as text (and clears the queue).
    static func last() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "unknown OpenSSL error" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
