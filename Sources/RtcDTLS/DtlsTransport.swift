import COpenSSL
import RtcSRTP

/// A DTLS 1.2 endpoint over memory I/O (RFC 6347, with DTLS-SRTP per RFC 5764
/// and the WebRTC rules of RFC 8827): datagrams in, datagrams and events out.
/// The peer's certificate must match a fingerprint from its SDP; anything else
/// fails the connection. No sockets, no threads: the owner feeds it packets
/// and timer ticks, and sends what it returns.
///
/// Not thread-safe: one owner drives it.
public final class DtlsTransport {
    /// Which side starts the handshake, from the SDP's `a=setup`.
    public enum Role: Sendable {
        /// Sends the ClientHello (`a=setup:active`).
        case client
        /// Waits for it (`a=setup:passive`).
        case server
    }

    /// What a datagram or a timer tick produced.
    public enum Event: Equatable, Sendable {
        /// Handshake done and the peer's certificate matched its fingerprint.
        case connected(srtpProfile: SrtpProfile?, srtpKeys: SrtpKeys?)
        case data([UInt8])
        /// The peer sent close_notify.
        case closed
        case failed(DtlsError)
    }

    /// Why the handshake or the connection failed.
    public enum DtlsError: Error, Equatable, Sendable, CustomStringConvertible {
        case fingerprintMismatch(String)
        case noPeerCertificate
        case handshake(String)
        case notConnected

        /// What went wrong, in words for a log or a user.
        public var description: String {
            switch self {
            case .fingerprintMismatch(let detail):
                "DTLS: the peer's certificate does not match the fingerprint in its SDP (\(detail))"
            case .noPeerCertificate: "DTLS: the peer presented no certificate"
            case .handshake(let detail): "DTLS handshake failed: \(detail)"
            case .notConnected: "DTLS: not connected"
            }
        }
    }

    /// A fingerprint the peer's certificate must match: SDP hash name and digest.
    public struct RemoteFingerprint: Equatable, Sendable {
        /// The SDP hash name (`sha-256`), lowercased.
        public var algorithm: String
        /// The certificate's digest under that hash.
        public var bytes: [UInt8]
        /// A fingerprint as the peer's `a=fingerprint` gives it.
        public init(algorithm: String, bytes: [UInt8]) {
            self.algorithm = algorithm.lowercased()
            self.bytes = bytes
        }
    }

    /// Client or server, fixed for the transport's life.
    public let role: Role
    /// Where the handshake and the connection are now.
    public private(set) var state: State = .new
    /// Where the handshake and the connection are.
    public enum State: Equatable, Sendable { case new, connecting, connected, closed, failed }

    private let context: DtlsContext
    private let ssl: OpaquePointer  // SSL
    private let input: OpaquePointer  // memory BIO the peer's datagrams go into
    private let sink: DatagramSink
    private let remoteFingerprints: [RemoteFingerprint]

    /// Larger than any datagram we accept from the network.
    public static let maxDatagram = 16 * 1024

    /// A transport with a context of its own (one certificate, the SRTP profiles offered); `mtu` bounds each record's datagram.
    public convenience init(
        role: Role, certificate: DtlsCertificate, remoteFingerprints: [RemoteFingerprint],
        srtpProfiles: [SrtpProfile] = [.aeadAes128Gcm, .aes128CmHmacSha1_80], mtu: Int = 1200
    ) throws(DtlsError) {
        try self.init(
            role: role, context: try DtlsContext(certificate: certificate, srtpProfiles: srtpProfiles),
            remoteFingerprints: remoteFingerprints, mtu: mtu)
    }

    /// A transport on a context made beforehand (making one costs a few milliseconds).
    public init(role: Role, context: DtlsContext, remoteFingerprints: [RemoteFingerprint], mtu: Int = 1200)
        throws(DtlsError)
    {
        self.role = role
        self.context = context
        self.remoteFingerprints = remoteFingerprints
        sink = DatagramSink(mtu: mtu)
        guard let ssl = SSL_new(context.context) else { throw .handshake(OpenSSLError.last()) }
        self.ssl = ssl
        guard let input = BIO_new(BIO_s_mem()), let output = sink.makeBIO() else {
            SSL_free(ssl)
            throw .handshake("cannot create BIOs")
        }
        self.input = input
        // An empty input BIO means "no datagram yet", not end of stream.
        BIO_ctrl(input, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        SSL_set_bio(ssl, input, output)
        _ = SSL_set_options(ssl, UInt64(1) << 12)  // SSL_OP_NO_QUERY_MTU: use ours
        SSL_ctrl(ssl, SSL_CTRL_SET_MTU, mtu, nil)
        // Handshake retransmissions start at 100 ms and double (up to 6.4 s), not
        // OpenSSL's 1 s: a first flight lost while ICE settles costs 100 ms.
        DTLS_set_timer_cb(ssl) { _, previous in previous == 0 ? 100_000 : min(previous * 2, 6_400_000) }
        if role == .client { SSL_set_connect_state(ssl) } else { SSL_set_accept_state(ssl) }
    }

    deinit {
        SSL_free(ssl)  // frees both BIOs
    }

    /// Starts the handshake; a client returns its ClientHello.
    public func start() -> [[UInt8]] {
        guard state == .new else { return [] }
        state = .connecting
        var events: [Event] = []
        advanceHandshake(&events)
        return sink.drain()
    }

    /// Feeds one datagram from the peer; returns what to send and what happened.
    public func receive(_ datagram: [UInt8]) -> (datagrams: [[UInt8]], events: [Event]) {
        guard !datagram.isEmpty, datagram.count <= Self.maxDatagram, state != .closed, state != .failed
        else { return ([], []) }
        if state == .new { state = .connecting }  // a server needs no start()
        _ = datagram.withUnsafeBytes { BIO_write(input, $0.baseAddress, Int32($0.count)) }
        var events: [Event] = []
        if state == .connecting { advanceHandshake(&events) }
        if state == .connected { readApplicationData(&events) }
        return (sink.drain(), events)
    }

    /// Encrypts application data (one record, e.g. one SCTP packet) for the peer.
    public func send(_ data: [UInt8]) throws(DtlsError) -> [[UInt8]] {
        guard state == .connected else { throw .notConnected }
        let written = data.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        guard written == data.count else { throw .handshake("SSL_write: \(OpenSSLError.last())") }
        return sink.drain()
    }

    /// When OpenSSL wants `handleTimeout` next (handshake retransmission), or nil.
    public func timeoutInterval() -> Duration? {
        guard state == .connecting else { return nil }
        var value = timeval()
        guard SSL_ctrl(ssl, DTLS_CTRL_GET_TIMEOUT, 0, &value) == 1 else { return nil }
        return .seconds(Int64(value.tv_sec)) + .microseconds(Int64(value.tv_usec))
    }

    /// Retransmits the last flight if its timer expired.
    public func handleTimeout() -> [[UInt8]] {
        guard state == .connecting else { return [] }
        if SSL_ctrl(ssl, DTLS_CTRL_HANDLE_TIMEOUT, 0, nil) < 0 {
            state = .failed
        }
        return sink.drain()
    }

    /// Sends close_notify.
    public func close() -> [[UInt8]] {
        guard state == .connected || state == .connecting else { return [] }
        state = .closed
        SSL_shutdown(ssl)
        return sink.drain()
    }

    private func advanceHandshake(_ events: inout [Event]) {
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            finishHandshake(&events)
            return
        }
        let error = SSL_get_error(ssl, result)
        if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return }
        state = .failed
        events.append(.failed(.handshake(OpenSSLError.last())))
    }

    private func finishHandshake(_ events: inout [Event]) {
        if let failure = verifyPeer() {
            state = .failed
            events.append(.failed(failure))
            return
        }
        state = .connected
        var profile: SrtpProfile?
        var keys: SrtpKeys?
        if let selected = SSL_get_selected_srtp_profile(ssl),
            let chosen = SrtpProfile(rawValue: UInt16(selected.pointee.id))
        {
            profile = chosen
            var material = [UInt8](repeating: 0, count: chosen.keyingMaterialLength)
            let label = "EXTRACTOR-dtls_srtp"
            if SSL_export_keying_material(ssl, &material, material.count, label, label.utf8.count, nil, 0, 0) == 1 {
                keys = SrtpKeys(keyingMaterial: material, profile: chosen, isClient: role == .client)
            }
            for index in material.indices { material[index] = 0 }
        }
        events.append(.connected(srtpProfile: profile, srtpKeys: keys))
    }

    /// RFC 8122 §5: the certificate must match one of the SDP's fingerprints.
    private func verifyPeer() -> DtlsError? {
        guard let peer = SSL_get1_peer_certificate(ssl) else { return .noPeerCertificate }
        defer { X509_free(peer) }
        guard !remoteFingerprints.isEmpty else { return .fingerprintMismatch("the SDP has no fingerprint") }
        for expected in remoteFingerprints {
            if let actual = DtlsCertificate.digest(of: peer, algorithm: expected.algorithm), actual == expected.bytes {
                return nil
            }
        }
        let algorithms = remoteFingerprints.map(\.algorithm).joined(separator: ", ")
        return .fingerprintMismatch("checked \(algorithms)")
    }

    private func readApplicationData(_ events: inout [Event]) {
        var buffer = [UInt8](repeating: 0, count: Self.maxDatagram)
        while true {
            let count = SSL_read(ssl, &buffer, Int32(buffer.count))
            if count > 0 {
                events.append(.data(Array(buffer.prefix(Int(count)))))
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_ZERO_RETURN {
                state = .closed
                events.append(.closed)
            } else if error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE {
                // A record that fails to decrypt is dropped by OpenSSL; anything worse ends the session.
                ERR_clear_error()
            }
            return
        }
    }
}

/// An OpenSSL DTLS context with our certificate, the SRTP profiles we offer
/// and DTLS 1.2 at least: made once per peer connection, before the handshake.
public final class DtlsContext: @unchecked Sendable {
    let context: OpaquePointer  // SSL_CTX, read-only once made

    /// The context for one peer connection's certificate and SRTP profiles.
    public init(
        certificate: DtlsCertificate, srtpProfiles: [SrtpProfile] = [.aeadAes128Gcm, .aes128CmHmacSha1_80]
    ) throws(DtlsTransport.DtlsError) {
        guard let context = SSL_CTX_new(DTLS_method()) else { throw .handshake(OpenSSLError.last()) }
        // WebRTC peers use self-signed certificates: accept any chain here and
        // check the fingerprint once the handshake is done.
        let acceptAny: @convention(c) (Int32, OpaquePointer?) -> Int32 = { _, _ in 1 }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, acceptAny)
        // WebRTC never resumes a DTLS session: no session tickets (making one for
        // the client cost the handshake's last flight ~0.2 ms, a third of it,
        // measured) and no server-side session cache.
        _ = SSL_CTX_set_options(context, Self.noTicket)
        SSL_CTX_ctrl(context, SSL_CTRL_SET_SESS_CACHE_MODE, Int(SSL_SESS_CACHE_OFF), nil)
        let profiles = srtpProfiles.map(\.openSSLName).joined(separator: ":")
        guard SSL_CTX_use_certificate(context, certificate.certificate) == 1,
            SSL_CTX_use_PrivateKey(context, certificate.key) == 1,
            SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(DTLS1_2_VERSION), nil) == 1,
            profiles.isEmpty || SSL_CTX_set_tlsext_use_srtp(context, profiles) == 0
        else {
            let reason = OpenSSLError.last()
            SSL_CTX_free(context)
            throw .handshake(reason)
        }
        self.context = context
    }

    deinit { SSL_CTX_free(context) }

    /// SSL_OP_NO_TICKET (a macro Swift does not import).
    static let noTicket = UInt64(1) << 14
}
