#if canImport(Glibc)
    import Glibc
#endif

/// Where a datagram on toxcore's socket came from: this node itself (toxcore
/// talking to its own address, see `IsolationCheck`) or another node.
/// Addresses are kept as 16 bytes, IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d),
/// as a dual-stack socket reports them.
struct DatagramOrigin: Equatable, Sendable {
    var address: [UInt8]
    var port: UInt16

    /// True when the datagram came from our own port on one of our own addresses.
    func isOwn(ownPort: UInt16, localAddresses: Set<[UInt8]>) -> Bool {
        port == ownPort && (Self.isLoopback(address) || localAddresses.contains(address))
    }

    static func isLoopback(_ address: [UInt8]) -> Bool {
        address == Array(repeating: 0, count: 15) + [1]  // ::1
            || (address.prefix(12) == Self.mappedPrefix[...] && address[12] == 127)  // 127.0.0.0/8
    }

    static let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]

    /// The source of the datagram at the head of `fd`'s queue, without taking
    /// it (MSG_PEEK; toxcore reads it). Nil if there is none or it is no IP.
    static func peek(_ fd: Int32) -> DatagramOrigin? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var byte: UInt8 = 0
        let received = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                recvfrom(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT), $0, &length)
            }
        }
        guard received >= 0 else { return nil }
        return withUnsafePointer(to: &storage) { origin(of: UnsafeRawPointer($0)) }
    }

    /// The address and port in a `sockaddr_in` or `sockaddr_in6`.
    static func origin(of address: UnsafeRawPointer) -> DatagramOrigin? {
        switch Int32(address.loadUnaligned(as: sockaddr.self).sa_family) {
        case AF_INET:
            let ipv4 = address.loadUnaligned(as: sockaddr_in.self)
            let bytes = withUnsafeBytes(of: ipv4.sin_addr.s_addr) { Array($0) }
            return DatagramOrigin(address: mappedPrefix + bytes, port: UInt16(bigEndian: ipv4.sin_port))
        case AF_INET6:
            let ipv6 = address.loadUnaligned(as: sockaddr_in6.self)
            let bytes = withUnsafeBytes(of: ipv6.sin6_addr) { Array($0) }
            return DatagramOrigin(address: bytes, port: UInt16(bigEndian: ipv6.sin6_port))
        default:
            return nil
        }
    }

    /// This host's interface addresses now (they change: DHCP, a new network).
    static func localAddresses() -> Set<[UInt8]> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var addresses = Set<[UInt8]>()
        var entry = list
        while let current = entry {
            if let address = current.pointee.ifa_addr, let origin = origin(of: UnsafeRawPointer(address)) {
                addresses.insert(origin.address)
            }
            entry = current.pointee.ifa_next
        }
        return addresses
    }
}
