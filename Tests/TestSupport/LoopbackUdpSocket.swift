import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A UDP socket on 127.0.0.1 for tests that send or take datagrams by hand
/// (a peek at what a node sends, a stray datagram).
public final class LoopbackUdpSocket {
    public let fd: Int32
    /// The port the kernel gave it.
    public let port: UInt16

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound else { throw POSIXError(.EADDRNOTAVAIL) }
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(fd) }

    public func send(_ bytes: [UInt8], to port: UInt16) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == bytes.count else { throw POSIXError(.EIO) }
    }

    /// Whether a datagram waits, after waiting up to `timeout`.
    public func waitReadable(timeout: Duration = .seconds(5)) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, Int32(timeout.components.seconds * 1000)) == 1
    }

    /// The datagram waiting (up to 2048 bytes), or none.
    public func receive() -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return count > 0 ? Array(buffer.prefix(count)) : []
    }
}
