import CarrierSessions
import Foundation

/// Options `session`, `forward` and `listen --sessions` share, and how they
/// reach a friend's session.
enum SessionOptions {
    static let valued: Set<String> = Set(["--wait", "--host-ip", "--recovery"]).union(IceServerOptions.valued)

    static let help = """
          --wait S               wait this long for the friend to come online (default 60)
          --recovery S           when the connection is lost, restart ICE for up to S
                                 seconds before giving up (default 30)
          --host-ip IP           gather ICE candidates on IP only (127.0.0.1 for local tests)
        \(IceServerOptions.help)
        """

    static func configuration(_ arguments: Arguments, _ global: GlobalOptions) throws -> SessionManager.Configuration {
        let calls = try CallOptions.client(arguments, global)
        return SessionManager.Configuration(peer: calls.peer, recoveryWindow: calls.timeouts.recoveryWindow)
    }
}

/// Reads a file descriptor (stdin) on a thread of its own, a few chunks
/// ahead of the consumer at most: a pipe or a file of any size goes out at
/// the pace the stream takes it.
final class BlockingReader: @unchecked Sendable {
    let chunks: AsyncStream<[UInt8]>
    /// Made at 0 and raised: libdispatch traps when a semaphore goes below its initial value at deinit.
    private let room = DispatchSemaphore(value: 0)

    init(fd: Int32 = 0, chunkSize: Int = 64 << 10, ahead: Int = 4) {
        for _ in 0..<ahead { room.signal() }
        let (chunks, sink) = AsyncStream<[UInt8]>.makeStream()
        self.chunks = chunks
        let room = room
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: chunkSize)
            while true {
                room.wait()
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, chunkSize) }
                if count < 0, errno == EINTR {
                    room.signal()
                    continue
                }
                guard count > 0 else { break }
                sink.yield(Array(buffer[0..<count]))
            }
            sink.finish()
        }
    }

    /// The consumer is done with a chunk: the thread may read one more.
    func taken() { room.signal() }
}
