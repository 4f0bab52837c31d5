import COpenSSL
import CarrierLog
import Foundation

/// Every TURN server reaches libnice through a bridge of ours: a listener on
/// 127.0.0.1 that libnice is given as a TURN server over TCP, each of its
/// connections carried on to the real server over UDP, TCP or TLS. It does
/// what libnice 0.1.21 does not:
/// - TLS (`turns:`, RFC 7065): libnice in its standard mode opens plain TCP to
///   a TLS relay (`priv_create_tcp_turn_socket` in agent.c wraps TLS only for
///   the Google and Microsoft dialects). The bridge speaks TLS (OpenSSL); the
///   certificate must chain to the system's trust store (OpenSSL's default
///   paths, which `SSL_CERT_FILE` and `SSL_CERT_DIR` override) and name the
///   server we asked for.
/// - Relaying to peers the server cannot reach is never asked
///   (`TurnPeerPolicy.forwards`): a hardened server closes the whole
///   allocation when one relayed send fails.
/// - A lost allocation is reported (`onLost`): an answer that says so, or the
///   server closing the connection. libnice only stops refreshing it.
///
/// Why UDP goes through TCP too: libnice sends TURN over UDP from its host
/// socket, and then checks the STUN server's answers on that socket against
/// the TURN request first, which refuses them (RFC 3489 style, no cookie):
/// no server-reflexive candidate came from the STUN server, only from the
/// TURN server's mapped address, which a bridge's own socket would falsify.
/// Over TCP libnice takes no mapped address from TURN, and its host socket
/// asks only the STUN server. The bridge sends libnice's requests again on
/// the UDP leg (`TurnRequestTimer`), as libnice trusts TCP to deliver them.
///
/// Threads: one accepts libnice's connections; each connection has one that
/// connects, shakes hands and then carries frames both ways until either end
/// closes; `onLost` runs on it. `close` wakes and ends them all.
final class TurnBridge: @unchecked Sendable {
    /// How the bridge reaches the server.
    enum Upstream: Sendable { case udp, tcp, tls }

    /// The port on 127.0.0.1 libnice connects to.
    let port: UInt16
    /// The server, as given (a name or an IP address).
    let host: String
    let serverPort: UInt16
    let upstream: Upstream
    private let listener: Int32
    /// For TLS only.
    private let context: OpaquePointer?
    private let onLost: @Sendable (TurnBridge) -> Void
    private let lock = NSLock()
    private var closed = false
    private var connections: Set<Int32> = []
    /// The relayed addresses this server gave (`address:port`), for stats; bounded by `maxConnections`.
    private var relayed: [String] = []

    /// Whether this server gave the relayed address `address:port`.
    func relays(_ address: String) -> Bool { lock.withLock { relayed.contains(address) } }

    /// libnice makes one connection per local address and TURN server.
    static let maxConnections = 16

    enum BridgeError: Error, CustomStringConvertible {
        case setup(String)
        var description: String {
            switch self {
            case .setup(let why): "TURN bridge: \(why)"
            }
        }
    }

    init(
        host: String, port: UInt16, upstream: Upstream, onLost: @escaping @Sendable (TurnBridge) -> Void
    ) throws(BridgeError) {
        self.host = host
        serverPort = port
        self.upstream = upstream
        self.onLost = onLost
        var context: OpaquePointer?
        if upstream == .tls {
            guard let made = SSL_CTX_new(TLS_client_method()) else { throw .setup("SSL_CTX_new failed") }
            SSL_CTX_set_verify(made, SSL_VERIFY_PEER, nil)
            guard SSL_CTX_set_default_verify_paths(made) == 1 else {
                SSL_CTX_free(made)
                throw .setup("no trust store")
            }
            SSL_CTX_ctrl(made, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
            context = made
        }
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
            if let context { SSL_CTX_free(context) }
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
        if let context { SSL_CTX_free(context) }
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
            thread.name = "carrier-turn"
            thread.start()
        }
    }

    /// One connection of libnice's: to the server, TLS if asked, then frames both ways.
    private func carry(_ client: Int32) {
        guard let server = Self.connect(host: host, port: serverPort, datagrams: upstream == .udp) else {
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
        guard registered else { return }
        guard let context else {
            return pump(client: client, link: ServerLink(fd: server, ssl: nil, datagrams: upstream == .udp))
        }
        guard let ssl = SSL_new(context) else { return }
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
        pump(client: client, link: ServerLink(fd: server, ssl: ssl, datagrams: false))
    }

    /// The connection to the server: a connected UDP socket, TCP, or TLS.
    private struct ServerLink {
        let fd: Int32
        let ssl: OpaquePointer?
        let datagrams: Bool

        var hasPending: Bool { ssl.map { SSL_pending($0) > 0 } ?? false }

        /// Bytes from the server; for UDP one datagram, or `refused` for the
        /// ICMP error of a server that is not there (restarted, or down: its
        /// allocations are gone), and the link stays for its return.
        func read(_ buffer: inout [UInt8]) -> Int {
            if let ssl { return Int(SSL_read(ssl, &buffer, Int32(buffer.count))) }
            let count = Glibc.read(fd, &buffer, buffer.count)
            return datagrams && count < 0 && errno == ECONNREFUSED ? Self.refused : count
        }

        static let refused = -2

        /// One frame to the server (for UDP, one datagram).
        func write(_ bytes: [UInt8]) -> Bool {
            guard !bytes.isEmpty else { return true }
            if let ssl { return SSL_write(ssl, bytes, Int32(bytes.count)) == Int32(bytes.count) }
            guard datagrams else { return TurnBridge.writeAll(fd, bytes, bytes.count) }
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
            return sent >= 0 || errno != EBADF  // a lost datagram is for the timer and libnice to mend
        }

        /// The server's IP address bytes.
        var peerAddress: [UInt8]? {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
            }
            guard named else { return nil }
            let family = Int32(address.ss_family)
            return withUnsafeBytes(of: &address) { raw -> [UInt8]? in
                switch family {
                case AF_INET: return Array(raw[4..<8])
                case AF_INET6: return Array(raw[8..<24])
                default: return nil
                }
            }
        }
    }

    /// Until either side closes: libnice's frames go to the server unless
    /// refused (and, over UDP, again until answered); the server's come back
    /// (ChannelData padded again for TCP).
    private func pump(client: Int32, link: ServerLink) {
        let server = link.peerAddress
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var fromClient = TurnFrameReader()
        var fromServer = TurnFrameReader()
        var timer = TurnRequestTimer()
        let clock = ContinuousClock()
        let started = clock.now
        func now() -> Double {
            let elapsed = (clock.now - started).components
            return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        }
        var fds = [
            pollfd(fd: client, events: Int16(POLLIN), revents: 0),
            pollfd(fd: link.fd, events: Int16(POLLIN), revents: 0),
        ]
        // Once per connection that had an allocation: libnice makes a new
        // connection for a new one, and a server down from the start lost nothing.
        var allocated = false
        var reported = false
        func lost(_ why: String) {
            guard allocated, !reported, !isClosed else { return }
            reported = true
            Self.log("\(host):\(serverPort) \(why): the allocation is gone")
            onLost(self)
        }
        while !isClosed {
            if !link.hasPending {
                fds[0].revents = 0
                fds[1].revents = 0
                let wait = timer.nextDeadline.map { Int32(max(0, ($0 - now()) * 1000).rounded(.up)) } ?? -1
                guard poll(&fds, 2, wait) >= 0 || errno == EINTR else { return }
            } else {
                fds[1].revents = Int16(POLLIN)
            }
            if fds[0].revents != 0 {
                let count = read(client, &buffer, buffer.count)
                guard count > 0 else { return }
                for frame in fromClient.read(buffer[0..<count])
                where !fromClient.framed || TurnPeerPolicy.forwards(frame, server: server) {
                    let outgoing = link.datagrams ? TurnFrameReader.unpadded(frame) : frame
                    guard link.write(outgoing) else { return }
                    if link.datagrams { timer.sent(outgoing, at: now()) }
                }
            }
            if fds[1].revents != 0 {
                var count = link.read(&buffer)
                if count == ServerLink.refused {
                    lost("is not there (ICMP port unreachable)")
                    count = 0
                }
                guard count >= 0, count > 0 || link.datagrams else { return lost("closed the connection") }
                let frames = link.datagrams ? [Array(buffer[0..<count])] : fromServer.read(buffer[0..<count])
                for frame in frames where !frame.isEmpty {
                    timer.answered(frame)
                    if let message = TurnMessage(frame), message.method == TurnMessage.allocate,
                        message.messageClass == .success, let address = message.relayedAddress
                    {
                        lock.withLock { relayed = Array((relayed + [address]).suffix(Self.maxConnections)) }
                        allocated = true
                    }
                    if TurnPeerPolicy.meansAllocationLost(frame) { lost("answered so") }
                    guard Self.writeAll(client, link.datagrams ? TurnFrameReader.padded(frame) : frame) else {
                        return
                    }
                }
            }
            for request in timer.due(at: now()) { guard link.write(request) else { return } }
        }
    }

    fileprivate static func writeAll(_ fd: Int32, _ bytes: [UInt8], _ count: Int? = nil) -> Bool {
        let count = count ?? bytes.count
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

    /// A TCP connection to the server's first address that answers within 5
    /// s, or a UDP socket connected to its first address.
    private static func connect(host: String, port: UInt16, datagrams: Bool) -> Int32? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(datagrams ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue)
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
                if !datagrams {
                    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                }
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

    private static func log(_ text: String) { Logger("ice").warning("TURN: \(text)") }
}
