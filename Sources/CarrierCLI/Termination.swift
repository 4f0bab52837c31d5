import AsyncExtras
import Dispatch
import Foundation

/// Turns SIGINT (Ctrl-C) and SIGTERM into an async event, so commands stop
/// their node cleanly (state saved, sockets closed) instead of dying mid-write.
enum Termination {
    /// For a command the daemon runs for a client: opened when that client
    /// asks to stop (its Ctrl-C) or goes away; the daemon's own signals are
    /// not the command's.
    @TaskLocal static var request: AsyncLatch?

    /// Returns when the process is asked to stop (or the client, for a
    /// command the daemon runs).
    static func wait() async {
        if let request { return await request.wait() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = Once(continuation)
            for signalNumber in [SIGINT, SIGTERM] {
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                source.setEventHandler { once.fire() }
                source.resume()
                once.keep(source)
            }
        }
    }

    /// Resumes the continuation on the first signal; keeps the sources alive.
    private final class Once: @unchecked Sendable {
        // Guarded by `lock`: the handlers of both signals may fire at once.
        private let lock = NSLock()
        private var continuation: CheckedContinuation<Void, Never>?
        private var sources: [any DispatchSourceSignal] = []

        init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }

        func keep(_ source: any DispatchSourceSignal) {
            lock.withLock { sources.append(source) }
        }

        func fire() {
            let pending = lock.withLock {
                defer { continuation = nil }
                return continuation
            }
            pending?.resume()
        }
    }
}
