import Foundation
import Testing

@testable import ExpressServer

/// Clients that hold the HTTP server's connections: one that trickles its
/// headers is cut once its request is past its time, and one address that
/// holds many connections leaves a share to the others.
@Suite struct SlowClientTests {
    /// A TCP client from a chosen loopback address, with plain system calls.
    final class RawClient {
        let descriptor: Int32

        init(from source: String, to port: UInt16) throws {
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            var remote = sockaddr_in()
            remote.sin_family = sa_family_t(AF_INET)
            remote.sin_port = port.bigEndian
            inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            let connected = withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0, connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        }

        deinit { close(descriptor) }

        func send(_ text: String) {
            _ = text.withCString { Glibc.send(descriptor, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }

        /// What the server sent until it closed, or nil if it is still open after `timeout`.
        func readUntilClosed(timeout: Duration) -> String? {
            let deadline = ContinuousClock.now + timeout
            var received: [UInt8] = []
            while ContinuousClock.now < deadline {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 100) > 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count <= 0 { return String(decoding: received, as: UTF8.self) }
                received += buffer[0..<count]
            }
            return nil
        }
    }

    static func server(requestSeconds: Double = 30) throws -> HttpServer {
        var limits = HttpServer.Limits(maxBodySize: 1024)
        limits.connections = 8
        limits.connectionsPerAddress = 8
        limits.busyAddress = 2
        limits.requestSeconds = requestSeconds
        return try HttpServer(host: "127.0.0.1", port: 0, limits: limits) { _ in
            HttpResponse(200, "fine", headers: ["Connection": "close"])
        }
    }

    /// A header line every 200 ms keeps libmicrohttpd's idle timer (30 s)
    /// from firing; the request's own time (1.5 s) cuts it.
    @Test func aClientThatTricklesItsHeadersIsCut() throws {
        let server = try Self.server(requestSeconds: 1.5)
        defer { server.stop() }
        let client = try RawClient(from: "127.0.0.1", to: server.port)
        client.send("GET /v1/info HTTP/1.1\r\nHost: x\r\n")
        let started = ContinuousClock.now
        var cut = false
        for index in 0..<40 {
            client.send("X-Slow-\(index): 1\r\n")
            if client.readUntilClosed(timeout: .milliseconds(200)) != nil {
                cut = true
                break
            }
        }
        #expect(cut, "still open after 8 s")
        #expect(ContinuousClock.now - started < .seconds(6))
        // An ordinary request is answered as before.
        let other = try RawClient(from: "127.0.0.1", to: server.port)
        other.send("GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(other.readUntilClosed(timeout: .seconds(5))?.contains("fine") == true)
    }

    /// Six idle connections from one address (of eight): it gets no more,
    /// and another address is still served.
    @Test func aBusyAddressLeavesRoomForOthers() throws {
        let server = try Self.server()
        defer { server.stop() }
        var held: [RawClient] = []
        for _ in 0..<6 { held.append(try RawClient(from: "127.0.0.1", to: server.port)) }
        for client in held { client.send("GET /v1/info HTTP/1.1\r\n") }
        // The server sees all six (each accepted on a pool thread).
        let deadline = ContinuousClock.now + .seconds(5)
        while server.connectionCount < 6, ContinuousClock.now < deadline { usleep(10_000) }
        #expect(server.connectionCount == 6)
        let refused = try RawClient(from: "127.0.0.1", to: server.port)
        refused.send("GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(refused.readUntilClosed(timeout: .seconds(5)) == "")
        let newcomer = try RawClient(from: "127.0.0.2", to: server.port)
        newcomer.send("GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(newcomer.readUntilClosed(timeout: .seconds(5))?.contains("fine") == true)
        #expect(held.count == 6)
    }
}
