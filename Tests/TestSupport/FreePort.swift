import Foundation

/// Ports free on 127.0.0.1 for the servers a test starts (one helper for
/// every suite, so the ways of finding one do not drift apart).
public enum FreePort {
    /// A TCP port the kernel picks, free at the moment of asking.
    public static func tcp() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE, "no socket for a free port") }
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE, "cannot find a free TCP port") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// A port free for both UDP and TCP (a toxcore node serves both on one),
    /// tried at random in 40000-49999.
    public static func udpAndTcp() throws -> UInt16 {
        for _ in 0..<50 {
            let port = UInt16.random(in: 40000...49999)
            if canBind(port, type: Int32(SOCK_DGRAM.rawValue)), canBind(port, type: Int32(SOCK_STREAM.rawValue)) {
                return port
            }
        }
        throw POSIXError(.EADDRINUSE, "no free port")
    }

    private static func canBind(_ port: UInt16, type: Int32) -> Bool {
        let fd = socket(AF_INET, type, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        address.sin_addr.s_addr = INADDR_ANY  // free on every address: a server may bind them all
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// 127.0.0.1:`port` as a socket address (also the relay's, `UdpRelay`).
    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
