import COpenSSL
import CarrierLog
import Foundation

/// TURN over TLS (`turns:`, RFC 7065) for libnice.
///
/// libnice 0.1.21 in its standard mode opens a plain TCP connection when it is
/// given a TLS relay (`priv_create_tcp_turn_socket` in agent.c wraps the socket
/// in TLS only for the Google and Microsoft dialects), so a `turns:` server
/// never answered. This bridge listens on 127.0.0.1; libnice is given it as a
/// TURN server over TCP, and each connection libnice makes is carried to the
/// real server inside TLS (OpenSSL). The server's certificate must chain to
/// the system's trust store (OpenSSL's default paths, which `SSL_CERT_FILE`
/// and `SSL_CERT_DIR` override) and name the server we asked for.
///
/// Threads: one accepts libnice's connections; each connection has one that
/// connects, shakes hands and then carries bytes both ways until either end
/// closes. `close` wakes and ends them all.
final class TurnTlsBridge: @unchecked Sendable {
    /// The port on 127.0.0.1 libnice connects to.
    let port: UInt16
    /// The server, as given (a name or an IP address).
    let host: String
    let serverPort: UInt16
    private let listener: Int32
    private let context: OpaquePointer
    private let lock = NSLock()
    private var closed = false
    private var connections: Set<Int32> = []

    /// libnice makes one connection per local address and TURN server.
    static let maxConnections = 16

    enum BridgeError: Error, CustomStringConvertible {
        case setup(String)
        var description: String {
            switch self {
            case .setup(let why): "TURN over TLS: \(why)"
            }
        }
    }

    init(host: String, port: UInt16) throws(BridgeError) {
        self.host = host
        serverPort = port
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw .setup("SSL_CTX_new failed") }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        guard SSL_CTX_set_default_verify_paths(context) == 1 else {
            SSL_CTX_free(context)
            throw .setup("no trust store")
        }
        SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 8) == 0
                    && getsockname(listener, $0, &length) == 0
            }
        }
        guard listener >= 0, bound else {
            if listener >= 0 { Foundation.close(listener) }
            SSL_CTX_free(context)
            throw .setup("cannot listen on 127.0.0.1 (errno \(errno))")
        }
        self.listener = listener
        self.context = context
        self.port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [weak self] in self?.acceptLoop() }
        thread.name = "carrier-turns-accept"
        thread.start()
    }

    deinit {
        close()
        SSL_CTX_free(context)
    }

    /// Stops accepting and cuts every connection; their threads end.
    func close() {
        let open = lock.withLock {
            defer { closed = true }
            return closed ? [] : Array(connections) + [listener]
        }
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private var isClosed: Bool { lock.withLock { closed } }

    private func acceptLoop() {
        defer { Foundation.close(listener) }
        while !isClosed {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let admitted = lock.withLock {
                guard !closed, connections.count < Self.maxConnections else { return false }
                connections.insert(client)
                return true
            }
            guard admitted else {
                Foundation.close(client)
                continue
            }
            var on: Int32 = 1  // TURN frames are small: no Nagle delay on their way back to libnice
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { [self] in
                carry(client)
                lock.withLock { _ = connections.remove(client) }
                Foundation.close(client)
            }
            thread.name = "carrier-turns"
            thread.start()
        }
    }

    /// One connection of libnice's: to the server, TLS, then bytes both ways.
    private func carry(_ client: Int32) {
        guard let server = Self.connect(host: host, port: serverPort) else {
            Self.log("cannot reach \(host):\(serverPort)")
            return
        }
        let registered = lock.withLock {
            guard !closed else { return false }
            connections.insert(server)
            return true
        }
        defer {
            lock.withLock { _ = connections.remove(server) }
            Foundation.close(server)
        }
        guard registered, let ssl = SSL_new(context) else { return }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, server)
        if Self.isAddress(host) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            // Server name indication (SSL_set_tlsext_host_name is a macro); OpenSSL copies the name.
            _ = host.withCString {
                SSL_ctrl(
                    ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name),
                    UnsafeMutableRawPointer(mutating: $0))
            }
            SSL_set1_host(ssl, host)
        }
        guard SSL_connect(ssl) == 1 else {
            let verify = SSL_get_verify_result(ssl)
            let reason =
                verify != X509_V_OK
                ? String(cString: X509_verify_cert_error_string(Int(verify))) : Self.openSSLError()
            Self.log("handshake with \(host):\(serverPort) failed: \(reason)")
            return
        }
        defer { SSL_shutdown(ssl) }
        pump(client: client, ssl: ssl, server: server)
    }

    /// Until either side closes: what libnice writes goes into TLS records,
    /// what the server sends comes out of them.
    private func pump(client: Int32, ssl: OpaquePointer, server: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var fds = [
            pollfd(fd: client, events: Int16(POLLIN), revents: 0),
            pollfd(fd: server, events: Int16(POLLIN), revents: 0),
        ]
        while !isClosed {
            if SSL_pending(ssl) == 0 {
                fds[0].revents = 0
                fds[1].revents = 0
                guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { return }
            } else {
                fds[1].revents = Int16(POLLIN)
            }
            if fds[0].revents != 0 {
                let count = read(client, &buffer, buffer.count)
                guard count > 0, SSL_write(ssl, buffer, Int32(count)) == Int32(count) else { return }
            }
            if fds[1].revents != 0 {
                let count = SSL_read(ssl, &buffer, Int32(buffer.count))
                guard count > 0, Self.writeAll(client, buffer, Int(count)) else { return }
            }
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], _ count: Int) -> Bool {
        var sent = 0
        while sent < count {
            let written = bytes.withUnsafeBytes { buffer in
                buffer.baseAddress.map { write(fd, $0 + sent, count - sent) } ?? -1
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            sent += written
        }
        return true
    }

    /// A TCP connection to the server's first address that answers within 5 s.
    private static func connect(host: String, port: UInt16) -> Int32? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0 else { return nil }
        defer { freeaddrinfo(result) }
        var entry = result
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                var none = timeval()
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
                var on: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            Foundation.close(fd)
        }
        return nil
    }

    static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    private static func openSSLError() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "the connection closed" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func log(_ text: String) { Logger("ice").warning("TURN over TLS: \(text)") }
}
