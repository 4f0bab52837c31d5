import CMicroHttpd
import CarrierNode
import Foundation

/// An HTTP/1.1 server on libmicrohttpd: the library parses HTTP, this type
/// gathers each request's body (bounded) and hands the request to `handler`.
///
/// Threads: libmicrohttpd runs a pool of `threads` threads; the handler runs
/// on the thread that serves the connection, so it must be thread-safe.
/// Bounded: connections in all and per address, header memory per
/// connection, an idle timeout, and the body size (`maxBodySize`: what passes
/// it is read and dropped, and the request is marked `bodyTooLarge`).
public final class HttpServer: @unchecked Sendable {
    /// What one client, and all of them, may cost the server.
    public struct Limits: Sendable {
        /// The largest body read; beyond it the request is marked `bodyTooLarge`.
        public var maxBodySize: Int
        /// Connections at once, in all.
        public var connections: UInt32 = 256
        /// Connections at once from one address.
        public var connectionsPerAddress: UInt32 = 64
        /// Memory for one connection's headers.
        public var headerMemory = 32 * 1024
        /// A connection idle this long is closed.
        public var idleTimeoutSeconds: UInt32 = 30
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

    private final class Context {
        let handler: @Sendable (HttpRequest) -> HttpResponse
        let limits: Limits
        init(handler: @escaping @Sendable (HttpRequest) -> HttpResponse, limits: Limits) {
            self.handler = handler
            self.limits = limits
        }
    }

    /// Listens on `host` (an IPv4 address) and `port` (0 picks a free one).
    public init(host: String, port: UInt16, limits: Limits, handler: @escaping @Sendable (HttpRequest) -> HttpResponse)
        throws
    {
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
                    limits.headerMemory, limits.idleTimeoutSeconds, Self.access, contextPointer, Self.completed, nil)
            }
        }
        guard let daemon else {
            throw CocoaError(
                .fileWriteUnknown,
                userInfo: [NSLocalizedDescriptionKey: "cannot listen on \(host):\(port) (in use, or not allowed)"])
        }
        self.port = cmhd_port(daemon)
    }

    /// Stops listening and waits for the pool's threads to finish.
    public func stop() {
        let running = lock.withLock {
            defer { daemon = nil }
            return daemon
        }
        if let running { MHD_stop_daemon(running) }
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
        for name in ["X-Carrier-User", "X-Carrier-Time", "X-Carrier-Nonce", "X-Carrier-Signature", "Content-Type"] {
            if let value = MHD_lookup_connection_value(connection, .HEADER_KIND, name) {
                headers[name.lowercased()] = String(cString: value)
            }
        }
        let request = HttpRequest(
            method: String(cString: method), path: String(cString: url), headers: headers, body: pending.body,
            bodyTooLarge: pending.tooLarge)
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

    /// Frees a request's state when libmicrohttpd is done with it (also after an error).
    private static let completed: MHD_RequestCompletedCallback = { _, _, slot, _ in
        guard let slot, let value = slot.pointee else { return }
        Unmanaged<Pending>.fromOpaque(value).release()
        slot.pointee = nil
    }
}
