import CNice
import CShimGLib
import Foundation

/// The selected pair's own UDP socket: room for bursts, and its sizes for tests.
extension IceAgent {
    /// UDP buffer size asked for on the selected pair's socket.
    static let socketBufferBytes: Int32 = 4 << 20

    /// Gives the selected pair's socket room for bursts. At the default
    /// (about 208 KiB) a data channel on loopback lost 300-800 of 45,000
    /// datagrams per 50 MB to a full receive buffer, and each loss costs SCTP
    /// a retransmission and half its window. The `FORCE` options pass
    /// `net.core.rmem_max`/`wmem_max` when the process may; otherwise the
    /// kernel caps the plain ones at those limits. libnice gives no socket
    /// for a relayed pair (its packets are wrapped): then nothing changes.
    /// On the GLib thread (from the selected-pair signal).
    func enlargeSelectedSocketBuffers() {
        withSelectedSocket { fd in
            for (forced, plain) in [(SO_RCVBUFFORCE, SO_RCVBUF), (SO_SNDBUFFORCE, SO_SNDBUF)] {
                var size = Self.socketBufferBytes
                let length = socklen_t(MemoryLayout<Int32>.size)
                if setsockopt(fd, SOL_SOCKET, forced, &size, length) != 0 {
                    _ = setsockopt(fd, SOL_SOCKET, plain, &size, length)
                }
            }
        }
    }

    /// The selected socket's kernel buffer sizes, for tests (nil: no socket,
    /// or a relayed pair).
    var selectedSocketBufferSizes: (receive: Int, send: Int)? {
        whileOpen(nil) {
            withSelectedSocket { fd in
                var sizes: [Int32] = [0, 0]
                for (index, option) in [SO_RCVBUF, SO_SNDBUF].enumerated() {
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    _ = getsockopt(fd, SOL_SOCKET, option, &sizes[index], &length)
                }
                return (Int(sizes[0]), Int(sizes[1]))
            }
        }
    }

    /// Runs `body` with the selected pair's socket; nil when libnice has none
    /// (no pair yet, or a relayed one).
    @discardableResult
    func withSelectedSocket<T>(_ body: (Int32) -> T) -> T? {
        guard let socket = nice_agent_get_selected_socket(agent, streamId, 1) else { return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(socket)) }
        return body(g_socket_get_fd(socket))
    }
}
