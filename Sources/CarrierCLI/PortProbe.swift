import Foundation

/// Finds a port free for both TCP and UDP, for a bootstrap node that serves
/// DHT (UDP) and TCP relay on the same number.
enum PortProbe {
    static func freePort() -> UInt16? {
        for _ in 0..<20 {
            guard let port = bindPort(type: SOCK_STREAM, port: 0) else { continue }
            if bindPort(type: SOCK_DGRAM, port: port) != nil { return port }
        }
        return nil
    }

    /// Binds a socket of `type` on 0.0.0.0:`port`, returns the bound port, closes it.
    private static func bindPort(type: __socket_type, port: UInt16) -> UInt16? {
        let fd = socket(AF_INET, Int32(type.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = INADDR_ANY
        address.sin_port = port.bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        return ok ? UInt16(bigEndian: address.sin_port) : nil
    }
}
