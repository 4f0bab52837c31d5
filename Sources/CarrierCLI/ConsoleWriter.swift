import Dispatch
import Foundation

/// Writes this process's stdout and stderr lines on a queue of its own, in
/// order, so that a reader that stops reading (a pipe nobody drains, a paused
/// terminal) blocks that queue and not the Swift pool: with two cores the
/// pool is two threads, and `listen` blocked on a full pipe in both stopped
/// serving its node and its friends (a bench run hung on exactly that).
///
/// At most `maxPending` lines wait; past that, lines are dropped and counted,
/// and the count is said on stderr once the output moves again.
final class ConsoleWriter: @unchecked Sendable {
    static let shared = ConsoleWriter()
    static let maxPending = 10_000

    private let queue = DispatchQueue(label: "carrier-console")
    private let lock = NSLock()
    /// Under `lock`.
    private var pending = 0
    private var dropped = 0

    /// Queues `text` (a newline added when `line`) for `stream`; drops it when too much waits.
    func write(_ text: String, to stream: Output.Stream, line: Bool = true) {
        let accepted = lock.withLock { () -> Bool in
            guard pending < Self.maxPending else {
                dropped += 1
                return false
            }
            pending += 1
            return true
        }
        guard accepted else { return }
        queue.async { [self] in
            let lost = lock.withLock { () -> Int in
                pending -= 1
                defer { dropped = 0 }
                return dropped
            }
            if lost > 0 {
                FileHandle.standardError.write(Data("(\(lost) lines dropped: the output was not read)\n".utf8))
            }
            let handle = stream == .stdout ? FileHandle.standardOutput : FileHandle.standardError
            handle.write(Data((line ? text + "\n" : text).utf8))
        }
    }

    /// Returns once every queued line is written (before the process exits).
    func drain() { queue.sync {} }
}
