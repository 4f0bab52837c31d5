import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's control socket: a Unix stream socket in the data directory
/// (`DIR/carrier.sock`), readable and writable by its owner only, carrying
/// one JSON object per line each way (docs/daemon.md).
enum ControlSocket {
    static func path(for dataDirectory: String) -> String { dataDirectory + "/carrier.sock" }

    /// The longest request line the daemon reads (a command line is far smaller).
    static let maxLine = 1 << 20

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Listens at `path`; a socket file nobody answers on (a daemon that was
    /// killed) is replaced, one somebody answers on is an error.
    static func listen(at path: String) throws(Failure) -> Int32 {
        if let fd = connect(to: path) {
            close(fd)
            throw Failure(description: "a daemon already serves \(path); stop it first (Ctrl-C or kill its process)")
        }
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "cannot make a socket: \(errorText())") }
        // Owner only from its first moment: the umask covers the bind, chmod makes it explicit.
        let mask = umask(0o077)
        let bound = withAddress(path) { bind(fd, $0, $1) }
        umask(mask)
        guard let bound, bound == 0, chmod(path, 0o600) == 0, Glibc.listen(fd, 16) == 0 else {
            let why = errorText()
            close(fd)
            throw Failure(description: "cannot listen at \(path): \(why)")
        }
        return fd
    }

    /// A connection to the daemon at `path`, or nil if none runs there.
    static func connect(to path: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard let result = withAddress(path, { Glibc.connect(fd, $0, $1) }), result == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Calls `body` with `path` as a `sockaddr_un`; nil if the path is too long for one.
    private static func withAddress(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    static func errorText() -> String { String(cString: strerror(errno)) }
}

/// One end of a control connection: whole lines in, JSON lines out. Reads
/// block (each connection has its own reading thread); writes are
/// serialized, and a peer that went away makes them fail quietly
/// (MSG_NOSIGNAL: no SIGPIPE).
final class ControlConnection: @unchecked Sendable {
    let fd: Int32
    // Guarded by `lock`: writes from several tasks, and close from any.
    private let lock = NSLock()
    private var closed = false
    private var buffer: [UInt8] = []

    init(fd: Int32) { self.fd = fd }

    deinit { close() }

    /// The next line without its newline; nil at the end, on an error, or
    /// when a line is longer than `ControlSocket.maxLine`. Blocks.
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            guard buffer.count <= ControlSocket.maxLine else { return nil }
            var chunk = [UInt8](repeating: 0, count: 16384)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
    }

    /// Sends one object as a JSON line; false if the peer is gone.
    @discardableResult
    func send(_ object: [String: any Sendable]) -> Bool {
        let bytes = Array((Output.encode(object) + "\n").utf8)
        return lock.withLock {
            guard !closed else { return false }
            var offset = 0
            while offset < bytes.count {
                let sent = bytes[offset...].withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if sent < 0, errno == EINTR { continue }
                guard sent > 0 else { return false }
                offset += sent
            }
            return true
        }
    }

    /// Ends the connection for reading too (a blocked `readLine` returns nil).
    func shutdownBoth() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            _ = Glibc.close(fd)
        }
    }
}
