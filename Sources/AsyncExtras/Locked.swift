import Foundation

/// A value behind a pthread lock (NSLock), shared between threads.
///
/// The standard library's `Synchronization.Mutex` would do, but on Linux it
/// locks with atomics and a futex that ThreadSanitizer does not see: `make
/// sanitize SANITIZER=thread` reported every access behind one as a race.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// A lock around `value`.
    public init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, under the lock.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }
}
