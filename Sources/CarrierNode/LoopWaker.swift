import AsyncExtras
import Dispatch

/// Lets the node's iteration loop sleep for a bounded time and be woken early
/// when the application queues work, so sends go out at once without the loop
/// spinning while idle.
final class LoopWaker: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, Never>?
        var generation: UInt64 = 0
        var wakePending = false
    }
    private let state = Locked(State())

    func sleep(for duration: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let generation: UInt64? = state.withLock { state in
                if state.wakePending {
                    state.wakePending = false
                    return nil
                }
                state.generation += 1
                state.continuation = continuation
                return state.generation
            }
            guard let generation else { return continuation.resume() }
            DispatchQueue.global().asyncAfter(deadline: .now() + duration.dispatchInterval) {
                self.fire(generation: generation)
            }
        }
    }

    /// Ends the current sleep now, or makes the next one return at once.
    func wake() { fire(generation: nil) }

    private func fire(generation: UInt64?) {
        let continuation: CheckedContinuation<Void, Never>? = state.withLock { state in
            if let generation, generation != state.generation { return nil }
            guard let continuation = state.continuation else {
                if generation == nil { state.wakePending = true }
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume()
    }
}
