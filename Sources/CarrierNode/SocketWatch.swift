import AsyncExtras

#if canImport(Glibc)
    import Glibc
#endif

/// toxcore's UDP socket, which the node's thread waits on (`NodeThread`),
/// so a packet is handled at once instead of after the loop's idle sleep (a
/// message with its receipt took ~60 ms, set by that sleep on both sides).
/// toxcore does not expose its socket; the process owns it, so it is found
/// among the process's descriptors by the port it is bound to.
///
/// It also notes when a datagram last came from another node rather than
/// from toxcore's own address (`IsolationCheck`): at each wake it peeks at
/// the source of the datagram at the head of the queue, a sample that on a
/// live network meets another node within seconds.
///
/// Threading: `datagramArrived` runs on the node's thread; it never reads
/// (toxcore does, in `tox_iterate`; a peek takes nothing). The socket is
/// watched again only after the loop has iterated (`NodeThread.rearm`), so a
/// datagram wakes the loop once.
final class SocketWatch: Sendable {
    /// The socket's descriptor (toxcore's; it closes it).
    let fd: Int32
    private let port: UInt16
    /// When a datagram from another node was last seen.
    private let heard = Locked<ContinuousClock.Instant?>(nil)
    /// This host's addresses, looked up again every 10 s.
    private let local = Locked((addresses: DatagramOrigin.localAddresses(), at: ContinuousClock.now))

    /// When a datagram from another node's address was last seen, if ever.
    var lastHeardFromOthers: ContinuousClock.Instant? { heard.withLock { $0 } }

    /// Watches the UDP socket bound to `port`; nil if none is found.
    init?(udpPort port: UInt16) {
        guard let fd = Self.udpSocket(boundTo: port) else { return nil }
        self.fd = fd
        self.port = port
    }

    /// The socket has a datagram: notes whether another node sent it.
    func datagramArrived() {
        guard let origin = DatagramOrigin.peek(fd) else { return }
        let now = ContinuousClock.now
        let addresses = local.withLock { cache in
            if now - cache.at > .seconds(10) { cache = (DatagramOrigin.localAddresses(), now) }
            return cache.addresses
        }
        if !origin.isOwn(ownPort: port, localAddresses: addresses) { heard.withLock { $0 = now } }
    }

    /// The descriptor of a UDP socket of this process bound to `port`.
    static func udpSocket(boundTo port: UInt16) -> Int32? {
        for fd in openDescriptors() where socketType(fd) == Int32(SOCK_DGRAM.rawValue) {
            let boundPort = address(of: fd, getsockname)?.port
            if boundPort == port { return fd }
        }
        return nil
    }

    /// The process's open descriptors now (from /proc/self/fd).
    static func openDescriptors() -> [Int32] {
        guard let directory = opendir("/proc/self/fd") else { return [] }
        defer { closedir(directory) }
        var descriptors: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let fd = Int32(name) { descriptors.append(fd) }
        }
        return descriptors
    }

    /// SOCK_DGRAM, SOCK_STREAM…, or nil for a descriptor that is no socket.
    static func socketType(_ fd: Int32) -> Int32? {
        var type: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 ? type : nil
    }

    /// When data last arrived on an established TCP connection of this
    /// process to one of `relayPorts` (toxcore's TCP relays: the bootstrap
    /// nodes, which it pings every 30 s), or to our own relay's `servingPort`
    /// (another node connected to us), if there is one: a node connected only
    /// through a relay, UDP blocked, is heard there (`IsolationCheck`).
    /// Matching by port keeps out the process's other connections (Express,
    /// TURN, other nodes in a test process).
    static func lastTcpReceive(
        relayPorts: Set<UInt16>, servingPort: UInt16?, now: ContinuousClock.Instant
    ) -> ContinuousClock.Instant? {
        var newest: ContinuousClock.Instant?
        for fd in openDescriptors() where socketType(fd) == Int32(SOCK_STREAM.rawValue) {
            var info = tcp_info()
            var length = socklen_t(MemoryLayout<tcp_info>.size)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0,
                Int32(info.tcpi_state) == Int32(TCP_ESTABLISHED)
            else { continue }  // a Unix socket fails TCP_INFO
            let peer = address(of: fd, getpeername)?.port
            let local = address(of: fd, getsockname)?.port
            guard peer.map(relayPorts.contains) == true || (servingPort != nil && local == servingPort) else {
                continue
            }
            let received = now - .milliseconds(Int64(info.tcpi_last_data_recv))
            newest = max(newest ?? received, received)
        }
        return newest
    }

    private static func address(
        of fd: Int32, _ name: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) -> DatagramOrigin? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { name(fd, $0, &length) == 0 }
        }
        return named ? withUnsafePointer(to: &storage) { DatagramOrigin.origin(of: UnsafeRawPointer($0)) } : nil
    }
}
