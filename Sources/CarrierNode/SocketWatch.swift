import AsyncExtras
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// Wakes the node's loop when toxcore's UDP socket has a datagram, so a
/// packet is handled at once instead of after the loop's idle sleep (a
/// message with its receipt took ~60 ms, set by that sleep on both sides).
/// toxcore does not expose its socket; the process owns it, so it is found
/// among the process's descriptors by the port it is bound to.
///
/// Threading: the read source's handler runs on a private serial queue; it
/// never reads (toxcore does, in `tox_iterate`) and suspends itself until the
/// loop has iterated (`rearm`), so a datagram wakes the loop once.
/// `@unchecked`: a dispatch source may be resumed, suspended and cancelled from any thread.
final class SocketWatch: @unchecked Sendable {
    private let source: any DispatchSourceRead
    /// Whether the handler suspended the source (shared with the handler).
    private let suspension = Locked(false)
    private let cancelled = DispatchSemaphore(value: 0)

    /// Watches the UDP socket bound to `port`; nil if none is found.
    init?(udpPort port: UInt16, onReadable: @escaping @Sendable () -> Void) {
        guard let fd = Self.udpSocket(boundTo: port) else { return nil }
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "carrier-node-socket"))
        let suspension = suspension
        let source = source
        source.setEventHandler {
            // Suspend and mark under one lock, so `rearm` never resumes before the suspend.
            suspension.withLock { suspended in
                guard !suspended else { return }
                suspended = true
                source.suspend()
            }
            onReadable()
        }
        let cancelled = cancelled
        source.setCancelHandler { cancelled.signal() }
        source.resume()
    }

    /// Listens again after the loop has read what was there.
    func rearm() {
        suspension.withLock { suspended in
            guard suspended else { return }
            suspended = false
            source.resume()
        }
    }

    /// Stops watching; returns once the source lets go of the descriptor
    /// (before toxcore closes it). Bounded.
    func cancel() {
        rearm()
        source.cancel()
        _ = cancelled.wait(timeout: .now() + 1)
    }

    /// The descriptor of a UDP socket of this process bound to `port`.
    static func udpSocket(boundTo port: UInt16) -> Int32? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let fd = Int32(name) else { continue }
            var type: Int32 = 0
            var typeLength = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &typeLength) == 0, type == Int32(SOCK_DGRAM.rawValue)
            else { continue }
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
            }
            guard named else { continue }
            let boundPort: UInt16 =
                switch Int32(address.ss_family) {
                case AF_INET:
                    withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                            UInt16(bigEndian: $0.pointee.sin_port)
                        }
                    }
                case AF_INET6:
                    withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                            UInt16(bigEndian: $0.pointee.sin6_port)
                        }
                    }
                default: 0
                }
            if boundPort == port { return fd }
        }
        return nil
    }
}
