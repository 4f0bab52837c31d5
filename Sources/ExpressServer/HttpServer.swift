import CMicroHttpd
import CarrierNode
import Foundation

/// An HTTP/1.1 server on libmicrohttpd: the library parses HTTP, this type
/// gathers each request's body (bounded) and hands the request to `handler`.
///
/// Threads: libmicrohttpd runs a pool of `threads` threads; the handler runs
/// on the thread that serves the connection, so it must be thread-safe. A
/// timer on a dispatch queue of its own cuts requests past their time.
/// Bounded: connections in all and per address, a share of them kept for
/// addresses that hold few (`ConnectionGuard`), header memory per
/// connection, an idle timeout, the time a request may take from its first
/// byte, and the body size (`maxBodySize`: what passes it is read and
/// dropped, and the request is marked `bodyTooLarge`).
public final class HttpServer: @unchecked Sendable {
    /// What one client, and all of them, may cost the server.
    public struct Limits: Sendable {
        /// The largest body read; beyond it the request is marked `bodyTooLarge`.
        public var maxBodySize: Int
        /// Connections at once, in all.
        public var connections: UInt32 = 256
        /// Connections at once from one address.
        public var connectionsPerAddress: UInt32 = 32
        /// The share of `connections` kept for addresses holding fewer than `busyAddress`.
        public var reservedShare = 0.25
        /// Connections from one address past which it gets none of the reserved share.
        public var busyAddress = 4
        /// Memory for one connection's headers.
        public var headerMemory = 32 * 1024
        /// A connection idle this long is closed.
        public var idleTimeoutSeconds: UInt32 = 30
        /// A request must be whole (headers and body) within this long of its
        /// connection's start or of the request before it: a client that
        /// trickles bytes is cut. 5 MB in a minute is 0.7 Mbit/s.
        public var requestSeconds = 60.0
        /// libmicrohttpd's thread pool.
        public var threads: UInt32 = 4

        /// The defaults, with this body limit.
        public init(maxBodySize: Int) { self.maxBodySize = maxBodySize }
    }

    /// The port it listens on (the one it was given, or the free one it took).
    public let port: UInt16
    /// Set in init, cleared by the first `stop` (from any thread: guarded).
    private var daemon: OpaquePointer?
    private let lock = NSLock()
    private let context: Context

    /// One request in progress: libmicrohttpd keeps it in the connection's slot.
    private final class Pending {
        var body: [UInt8] = []
        var tooLarge = false
    }

    private final class Context: @unchecked Sendable {
        let handler: @Sendable (HttpRequest) -> HttpResponse
        let limits: Limits
        private let lock = NSLock()
        private var connections: ConnectionGuard
        init(handler: @escaping @Sendable (HttpRequest) -> HttpResponse, limits: Limits) {
            self.handler = handler
            self.limits = limits
            var connections = ConnectionGuard(
                maxConnections: Int(limits.connections), requestMilliseconds: Int64(limits.requestSeconds * 1000))
            connections.reservedShare = limits.reservedShare
            connections.busyAddress = limits.busyAddress
            self.connections = connections
        }

        func guarding<T>(_ body: (inout ConnectionGuard) -> T) -> T { lock.withLock { body(&connections) } }

        /// Shuts down the sockets of requests past their time.
        func cutOverdue() {
            for descriptor in guarding({ $0.overdue(now: HttpServer.milliseconds()) }) {
                _ = shutdown(descriptor, Int32(SHUT_RDWR))
            }
        }
    }

    /// Cuts overdue requests every half second.
    private let reaper: DispatchSourceTimer

    /// A certificate and its key, PEM, for HTTPS (Carrier's clients speak only HTTPS).
    public struct Tls: Sendable {
        /// The certificate (chain), PEM.
        public var certificate: String
        /// Its private key, PEM.
        public var key: String

        /// A certificate and key as PEM text.
        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// Listens on `host` (an IPv4 address) and `port` (0 picks a free one),
    /// over HTTPS when `tls` is given.
    public init(
        host: String, port: UInt16, limits: Limits, tls: Tls? = nil,
        handler: @escaping @Sendable (HttpRequest) -> HttpResponse
    ) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw CocoaError(.formatting, userInfo: [NSLocalizedDescriptionKey: "\(host) is not an IPv4 address"])
        }
        context = Context(handler: handler, limits: limits)
        let contextPointer = Unmanaged.passUnretained(context).toOpaque()
        daemon = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                cmhd_start(
                    socketAddress, limits.threads, limits.connections, limits.connectionsPerAddress,
                    limits.headerMemory, limits.idleTimeoutSeconds, Self.access, contextPointer, Self.completed,
                    contextPointer, Self.policy, Self.notify, tls?.certificate, tls?.key)
            }
        }
        guard let daemon else {
            throw CocoaError(
                .fileWriteUnknown,
                userInfo: [NSLocalizedDescriptionKey: "cannot listen on \(host):\(port) (in use, or not allowed)"])
        }
        self.port = cmhd_port(daemon)
        reaper = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "express.http.reaper"))
        reaper.schedule(deadline: .now() + .milliseconds(500), repeating: .milliseconds(500))
        reaper.setEventHandler { [context] in context.cutOverdue() }
        reaper.resume()
    }

    static func milliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// Connections the server holds now.
    public var connectionCount: Int { context.guarding { $0.count } }

    /// Stops listening and waits for the pool's threads to finish.
    public func stop() {
        let running = lock.withLock {
            defer { daemon = nil }
            return daemon
        }
        if let running {
            reaper.cancel()
            MHD_stop_daemon(running)
        }
    }

    deinit { stop() }

    /// libmicrohttpd's access handler: called on a pool thread once with the
    /// headers, then with each piece of the body, then once with none.
    private static let access: MHD_AccessHandlerCallback = {
        contextPointer, connection, url, method, _, uploadData, uploadSize, slot in
        guard let contextPointer, let connection, let url, let method, let uploadSize, let slot else { return .NO }
        let context = Unmanaged<Context>.fromOpaque(contextPointer).takeUnretainedValue()
        guard let slotValue = slot.pointee else {
            let pending = Pending()
            // A declared length past the limit is known at once.
            if let length = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
                let declared = Int(String(cString: length)), declared > context.limits.maxBodySize
            {
                pending.tooLarge = true
            }
            slot.pointee = Unmanaged.passRetained(pending).toOpaque()
            return .YES
        }
        let pending = Unmanaged<Pending>.fromOpaque(slotValue).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            if !pending.tooLarge, pending.body.count + count <= context.limits.maxBodySize, let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: count) {
                    pending.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
                }
            } else {
                pending.tooLarge = true
                pending.body = []
            }
            uploadSize.pointee = 0
            return .YES
        }
        var headers: [String: String] = [:]
        for name in [
            "X-Carrier-User", "X-Carrier-Time", "X-Carrier-Nonce", "X-Carrier-Signature", "X-Carrier-Contact",
            "Content-Type",
        ] {
            if let value = MHD_lookup_connection_value(connection, .HEADER_KIND, name) {
                headers[name.lowercased()] = String(cString: value)
            }
        }
        var request = HttpRequest(
            method: String(cString: method), path: String(cString: url), headers: headers, body: pending.body,
            bodyTooLarge: pending.tooLarge, peerAddress: HttpServer.clientAddress(connection))
        if let until = MHD_lookup_connection_value(connection, .GET_ARGUMENT_KIND, "until") {
            request.query["until"] = String(cString: until)
        }
        let answer = context.handler(request)
        let response = answer.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        for (name, value) in answer.headers { MHD_add_response_header(response, name, value) }
        if answer.headers["Content-Type"] == nil { MHD_add_response_header(response, "Content-Type", "text/plain") }
        return MHD_queue_response(connection, UInt32(answer.status), response)
    }

    /// Frees a request's state when libmicrohttpd is done with it (also
    /// after an error); the connection's next request starts its time.
    private static let completed: MHD_RequestCompletedCallback = { contextPointer, connection, slot, _ in
        if let contextPointer, let connection {
            let context = Unmanaged<Context>.fromOpaque(contextPointer).takeUnretainedValue()
            let id = UInt(bitPattern: connection)
            context.guarding { $0.requestEnded(id, now: milliseconds()) }
        }
        guard let slot, let value = slot.pointee else { return }
        Unmanaged<Pending>.fromOpaque(value).release()
        slot.pointee = nil
    }

    /// Admits or refuses a new connection (on the thread that accepts it).
    private static let policy: MHD_AcceptPolicyCallback = { contextPointer, address, _ in
        guard let contextPointer else { return .NO }
        let context = Unmanaged<Context>.fromOpaque(contextPointer).takeUnretainedValue()
        var buffer = [CChar](repeating: 0, count: 64)
        cmhd_address_text(address, &buffer, socklen_t(buffer.count))
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return context.guarding { $0.admit(text, now: milliseconds()) } ? .YES : .NO
    }

    /// A connection's start and close (on its worker thread).
    private static let notify: MHD_NotifyConnectionCallback = { contextPointer, connection, _, code in
        guard let contextPointer, let connection else { return }
        let context = Unmanaged<Context>.fromOpaque(contextPointer).takeUnretainedValue()
        let id = UInt(bitPattern: connection)
        if code.rawValue == 0 {  // MHD_CONNECTION_NOTIFY_STARTED
            let address = clientAddress(connection) ?? ""
            let descriptor = cmhd_connection_fd(connection)
            context.guarding { $0.started(id, address: address, descriptor: descriptor, now: milliseconds()) }
        } else {
            context.guarding { $0.closed(id) }
        }
    }

    private static func clientAddress(_ connection: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        cmhd_client_address(connection, &buffer, socklen_t(buffer.count))
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.isEmpty ? nil : text
    }
}
