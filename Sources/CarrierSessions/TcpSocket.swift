import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A non-blocking TCP socket with async reads, writes, accepts and connects.
/// Readiness comes from dispatch sources on one serial queue per socket; no
/// thread of the Swift pool ever blocks on the socket.
final class TcpSocket: @unchecked Sendable {
    enum Failure: Error, Equatable, CustomStringConvertible {
        case system(String, Int32)
        case closed
        case badAddress(String)
        case timedOut(String)

        var description: String {
            switch self {
            case .system(let what, let code): "\(what): \(String(cString: strerror(code)))"
            case .closed: "the socket is closed"
            case .badAddress(let text): "not an IPv4 host:port: \(text)"
            case .timedOut(let what): "\(what) timed out"
            }
        }

        /// The peer reset the connection (rather than closing it).
        var isReset: Bool {
            if case .system(_, let code) = self { return code == ECONNRESET || code == EPIPE }
            return false
        }
    }

    let fd: Int32
    private let queue = DispatchQueue(label: "carrier.tcp")
    // Guarded by `lock`: the sources, their waiters, and whether the socket is closed.
    private let lock = NSLock()
    private var readSource: DispatchSourceRead?
    private var writeSource: DispatchSourceWrite?
    private var readWaiter: CheckedContinuation<Void, any Error>?
    private var writeWaiter: CheckedContinuation<Void, any Error>?
    private var isClosed = false

    private init(fd: Int32) {
        self.fd = fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let read = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        let write = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        readSource = read
        writeSource = write
        read.setEventHandler { [weak self] in self?.ready(reading: true) }
        write.setEventHandler { [weak self] in self?.ready(reading: false) }
        // Created suspended: resumed only while someone waits.
    }

    deinit { close() }

    // MARK: Making sockets

    /// A listening socket on `host:port` (port 0: a free one, see `localPort`).
    static func listen(host: String, port: UInt16, backlog: Int32 = 128) throws(Failure) -> TcpSocket {
        var address = try makeAddress(host: host, port: port)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .system("cannot listen on \(host):\(port)", code)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .system("listen", code)
        }
        return TcpSocket(fd: fd)
    }

    /// Connects to `host:port`, giving up after `timeout`.
    static func connect(host: String, port: UInt16, timeout: Duration = .seconds(10)) async throws -> TcpSocket {
        var address = try makeAddress(host: host, port: port)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure.system("socket", errno) }
        let socket = TcpSocket(fd: fd)
        let started = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if started != 0 {
            guard errno == EINPROGRESS else { throw Failure.system("connect to \(host):\(port)", errno) }
            let waited = Task {
                try await Task.sleep(for: timeout)
                socket.close()
            }
            defer { waited.cancel() }
            do { try await socket.waitWritable() } catch { throw Failure.timedOut("connect to \(host):\(port)") }
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
            guard code == 0 else { throw Failure.system("connect to \(host):\(port)", code) }
        }
        return socket
    }

    static func makeAddress(host: String, port: UInt16) throws(Failure) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw .badAddress("\(host):\(port)") }
        return address
    }

    /// Parses `HOST:PORT` (IPv4).
    static func parse(_ text: String) throws(Failure) -> (host: String, port: UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw .badAddress(text)
        }
        let host = String(text[..<colon])
        _ = try makeAddress(host: host, port: port)
        return (host, port)
    }

    /// The port this socket is bound to.
    var localPort: UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    // MARK: I/O

    /// The next connection on a listening socket.
    func accept() async throws -> TcpSocket {
        while true {
            let client = Glibc.accept(fd, nil, nil)
            if client >= 0 { return TcpSocket(fd: client) }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
                throw Failure.system("accept", errno)
            }
            try await waitReadable()
        }
    }

    /// Up to `maximum` bytes; empty at the end of the stream (the peer shut its side).
    func read(maximum: Int = 64 * 1024) async throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximum)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, maximum, 0) }
            if count >= 0 { return Array(buffer[0..<count]) }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { throw Failure.system("read", errno) }
            try await waitReadable()
        }
    }

    /// Writes everything, waiting while the socket's buffer is full.
    func write(_ bytes: [UInt8]) async throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if count > 0 {
                offset += count
                continue
            }
            guard count < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
                throw Failure.system("write", count < 0 ? errno : EPIPE)
            }
            try await waitWritable()
        }
    }

    /// Half-close: no more writes from us; the peer reads the end of the stream.
    func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }

    /// Closes with a reset (RST) instead of an orderly close: the peer sees the
    /// connection fail, which is what it must see when the far side failed.
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    /// Closes the socket; waiting reads and writes fail with `.closed`.
    func close() {
        let waiters = lock.withLock { () -> [CheckedContinuation<Void, any Error>] in
            guard !isClosed, let readSource, let writeSource else { return [] }
            isClosed = true
            // The descriptor closes once both sources are cancelled; a suspended
            // source must be resumed to be cancelled.
            let fd = self.fd
            let group = DispatchGroup()
            for source in [readSource, writeSource] as [any DispatchSourceProtocol] {
                group.enter()
                source.setCancelHandler { group.leave() }
                source.cancel()
            }
            if readWaiter == nil { readSource.resume() }
            if writeWaiter == nil { writeSource.resume() }
            group.notify(queue: .global()) { _ = Glibc.close(fd) }
            defer {
                readWaiter = nil
                writeWaiter = nil
            }
            return [readWaiter, writeWaiter].compactMap { $0 }
        }
        for waiter in waiters { waiter.resume(throwing: Failure.closed) }
    }

    private func waitReadable() async throws { try await wait(reading: true) }
    private func waitWritable() async throws { try await wait(reading: false) }

    /// Resumes the direction's source until it fires once. A source is resumed
    /// exactly while it has a waiter (dispatch sources count their suspensions).
    private func wait(reading: Bool) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let waiting = lock.withLock { () -> Bool in
                guard !isClosed else { return false }
                if reading {
                    readWaiter = continuation
                    readSource?.resume()
                } else {
                    writeWaiter = continuation
                    writeSource?.resume()
                }
                return true
            }
            if !waiting { continuation.resume(throwing: Failure.closed) }
        }
    }

    /// On the socket's queue: the descriptor is ready; wake its waiter.
    private func ready(reading: Bool) {
        let waiter = lock.withLock { () -> CheckedContinuation<Void, any Error>? in
            guard !isClosed else { return nil }
            if reading {
                defer { readWaiter = nil }
                if readWaiter != nil { readSource?.suspend() }
                return readWaiter
            }
            defer { writeWaiter = nil }
            if writeWaiter != nil { writeSource?.suspend() }
            return writeWaiter
        }
        waiter?.resume()
    }
}
