import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One kept-alive HTTP/1.1 connection to an Express node, blocking: the load
/// generator gives each worker thread its own, so the client adds no pool or
/// event loop of its own to what is measured. Answers must carry
/// Content-Length (libmicrohttpd's do).
final class HttpConnection {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
    }

    private let host: String
    private let port: UInt16
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []

    init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Sends one request and reads its answer; reconnects once if the server closed the connection.
    func send(_ method: String, _ path: String, headers: [String: String], body: [UInt8]) throws(Failure) -> Answer {
        do { return try attempt(method, path, headers: headers, body: body) } catch {
            disconnect()
            return try attempt(method, path, headers: headers, body: body)
        }
    }

    private func attempt(_ method: String, _ path: String, headers: [String: String], body: [UInt8]) throws(Failure)
        -> Answer
    {
        if fd < 0 { try connect() }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        try write(Array(head.utf8) + body)
        return try readAnswer()
    }

    private func connect() throws(Failure) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            disconnect()
            throw Failure(description: "cannot connect to \(host):\(port): \(reason)")
        }
    }

    private func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
        buffer.removeAll()
    }

    private func write(_ bytes: [UInt8]) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    private func fill() throws(Failure) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw Failure(description: "the server closed the connection") }
        buffer += chunk.prefix(count)
    }

    private func readAnswer() throws(Failure) -> Answer {
        let separator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while end == nil {
            end = buffer.indices.dropLast(3).first { buffer[$0..<$0 + 4].elementsEqual(separator) }
            if end == nil {
                guard buffer.count < 65536 else { throw Failure(description: "headers too long") }
                try fill()
            }
        }
        guard let end else { throw Failure(description: "no header end") }
        let lines = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw Failure(description: "not an HTTP answer")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        let start = end + 4
        while buffer.count < start + length { try fill() }
        let body = Array(buffer[start..<start + length])
        buffer.removeFirst(start + length)
        return Answer(status: status, headers: headers, body: body)
    }
}
