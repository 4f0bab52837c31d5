import Foundation

/// A one-time event that any number of tasks can wait for: `open()` lets
/// every waiter go, and every later `wait()` returns at once.
public final class AsyncLatch: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// A latch that is not open yet.
    public init() {}

    /// Opens the latch: every waiter goes on, now and later.
    public func open() {
        let waiting = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            isOpen = true
            defer { waiters = [] }
            return waiters
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Returns once the latch is open (at once if it is).
    public func wait() async {
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool in
                if isOpen { return true }
                waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Whether the latch has been opened.
    public var opened: Bool { lock.withLock { isOpen } }
}
