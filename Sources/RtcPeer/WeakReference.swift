import Foundation

/// A weak reference for a handler made before the object it calls into: set
/// once the object exists (on the thread that made it), read on the threads
/// that deliver events (ICE, SCTP). A lock makes the late write visible to
/// them; an unguarded one was a data race, however short its window.
final class WeakReference<Object: AnyObject>: @unchecked Sendable {
    private let lock = NSLock()
    private weak var object: Object?

    /// The object, while it lives and once it was set.
    var value: Object? {
        get { lock.withLock { object } }
        set { lock.withLock { object = newValue } }
    }
}
