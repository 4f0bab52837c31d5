/// `body`'s result, or nil once `timeout` passes, without waiting for `body`
/// to stop: unlike `withTimeout` (a task group, which waits for its children),
/// a body that does not end on cancellation (an attempt waiting on a peer)
/// is cancelled and left to finish on its own; a result it still returns then
/// goes to `late`, to be released (a channel closed, a socket freed).
public func withDeadline<T: Sendable>(
    _ timeout: Duration, late: @escaping @Sendable (T) -> Void = { _ in },
    _ body: @escaping @Sendable () async -> T?
) async -> T? {
    let pending = Locked<CheckedContinuation<T?, Never>?>(nil)
    /// Resumes the caller once: true for the first to get here.
    @Sendable func finish(_ value: T?) -> Bool {
        guard
            let continuation = pending.withLock({ slot in
                defer { slot = nil }
                return slot
            })
        else { return false }
        continuation.resume(returning: value)
        return true
    }
    return await withCheckedContinuation { continuation in
        pending.withLock { $0 = continuation }
        let work = Task { await body() }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if finish(nil) { work.cancel() }
        }
        Task {
            let value = await work.value
            timer.cancel()
            if !finish(value), let value { late(value) }
        }
    }
}
