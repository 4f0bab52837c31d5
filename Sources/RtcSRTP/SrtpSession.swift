import CSrtp
import Dispatch
import Glibc

/// One direction of SRTP/SRTCP protection on libsrtp2: an outbound session
/// protects what we send, an inbound one checks and decrypts what arrives,
/// with replay protection (a 1024-packet window) always on.
///
/// Not thread-safe (libsrtp sessions are not): one owner uses it at a time.
public final class SrtpSession {
    /// Whether the session protects what we send or unprotects what we receive.
    public enum Direction: Sendable { case inbound, outbound }

    /// Why a packet could not be protected or unprotected.
    public enum SrtpFailure: Error, Equatable, Sendable, CustomStringConvertible {
        case badKey
        case authenticationFailed
        case replayed
        case malformed
        case library(Int32)

        /// What went wrong, in words.
        public var description: String {
            switch self {
            case .badKey: "SRTP key or salt has the wrong length"
            case .authenticationFailed: "SRTP authentication failed (tampered, or the wrong key)"
            case .replayed: "SRTP packet replayed (already seen, or too old)"
            case .malformed: "not an SRTP packet"
            case .library(let code): "libsrtp error \(code)"
            }
        }
    }

    /// The protection profile negotiated through DTLS.
    public let profile: SrtpProfile
    /// What this session is for (libsrtp keeps one policy per direction).
    public let direction: Direction
    private var session: srtp_t?

    /// libsrtp's one-time global initialisation. A failure here usually means
    /// another part of the process initialised it already; srtp_create reports
    /// any real problem.
    private static let initialized: Void = {
        holdNss()
        _ = srtp_init()
    }()

    /// Keeps NSS initialised for the life of the process when libsrtp is built
    /// on it (as Debian builds libsrtp2). libsrtp opens an NSS context for each
    /// cipher it makes and closes it with the cipher; with no other context
    /// open NSS then unloads and reloads its crypto modules every time, and
    /// srtp_init's self-tests make dozens of ciphers: 16 ms of CPU per process,
    /// 7 ms with this context held (measured). The symbol is looked up at run
    /// time, so a libsrtp on another crypto library is left as it is. The
    /// flags are libsrtp's own (the first context's settings hold).
    private static func holdNss() {
        typealias InitContext =
            @convention(c) (
                UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
                UnsafeMutableRawPointer?, UInt32
            ) -> UnsafeMutableRawPointer?
        guard let symbol = dlsym(nil, "NSS_InitContext") else { return }
        // READONLY | NOCERTDB | NOMODDB | FORCEOPEN | OPTIMIZESPACE; never closed.
        _ = unsafeBitCast(symbol, to: InitContext.self)("", "", "", "", nil, 0x2F)
    }

    /// Starts libsrtp (srtp_init runs its crypto self-tests, ~7 ms) on a
    /// background thread; the first session waits for it if it is not done.
    public static func prepareInBackground() {
        DispatchQueue.global(qos: .userInitiated).async { _ = initialized }
    }

    /// A session for one direction with a master key and salt of the profile's sizes.
    public init(profile: SrtpProfile, key: [UInt8], salt: [UInt8], direction: Direction) throws(SrtpFailure) {
        guard key.count == profile.keyLength, salt.count == profile.saltLength else { throw .badKey }
        Self.initialized
        self.profile = profile
        self.direction = direction
        var policy = srtp_policy_t()
        switch profile {
        case .aes128CmHmacSha1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        case .aeadAes128Gcm:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        }
        policy.ssrc.type = direction == .inbound ? ssrc_any_inbound : ssrc_any_outbound
        policy.window_size = 1024
        policy.allow_repeat_tx = 1  // retransmissions (NACK answers) resend the same packet
        var master = key + salt
        var created: srtp_t?
        let status = master.withUnsafeMutableBufferPointer { buffer in
            policy.key = buffer.baseAddress
            return srtp_create(&created, &policy)
        }
        for index in master.indices { master[index] = 0 }
        guard status == srtp_err_status_ok, let created else { throw .library(Int32(status.rawValue)) }
        session = created
    }

    deinit {
        if let session { srtp_dealloc(session) }
    }

    /// Encrypts and authenticates an RTP packet (outbound sessions).
    public func protectRtp(_ packet: [UInt8]) throws(SrtpFailure) -> [UInt8] {
        try transform(packet, grow: true) { srtp_protect($0, $1, $2) }
    }

    /// Checks and decrypts an SRTP packet; replays and forgeries are errors (inbound sessions).
    public func unprotectRtp(_ packet: [UInt8]) throws(SrtpFailure) -> [UInt8] {
        try transform(packet, grow: false) { srtp_unprotect($0, $1, $2) }
    }

    /// Encrypts and authenticates a compound RTCP packet (outbound sessions).
    public func protectRtcp(_ packet: [UInt8]) throws(SrtpFailure) -> [UInt8] {
        try transform(packet, grow: true) { srtp_protect_rtcp($0, $1, $2) }
    }

    /// Checks and decrypts an SRTCP packet (inbound sessions).
    public func unprotectRtcp(_ packet: [UInt8]) throws(SrtpFailure) -> [UInt8] {
        try transform(packet, grow: false) { srtp_unprotect_rtcp($0, $1, $2) }
    }

    /// Runs one libsrtp call in place; protecting needs room for the trailer
    /// (auth tag, and the SRTCP index for RTCP).
    private func transform(
        _ packet: [UInt8], grow: Bool,
        _ call: (srtp_t, UnsafeMutableRawPointer, UnsafeMutablePointer<Int32>) -> srtp_err_status_t
    ) throws(SrtpFailure) -> [UInt8] {
        guard let session, packet.count >= 8, packet.count < 65536 else { throw .malformed }
        var buffer = packet + [UInt8](repeating: 0, count: grow ? Int(SRTP_MAX_TRAILER_LEN) + 4 : 0)
        var length = Int32(packet.count)
        let status = buffer.withUnsafeMutableBytes { raw in
            call(session, raw.baseAddress!, &length)
        }
        switch status {
        case srtp_err_status_ok:
            buffer.removeLast(buffer.count - Int(length))
            return buffer
        case srtp_err_status_auth_fail: throw .authenticationFailed
        case srtp_err_status_replay_fail, srtp_err_status_replay_old: throw .replayed
        case srtp_err_status_bad_param: throw .malformed
        default: throw .library(Int32(status.rawValue))
        }
    }
}
