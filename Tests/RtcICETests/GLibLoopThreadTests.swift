import CNice
import Foundation
import Testing

@testable import RtcICE

/// GLib loops run on threads that are kept for the next loop: a thread per
/// ICE agent left memory behind in the libraries under libnice (GnuTLS's
/// per-thread random state, 176 bytes a call; about 0.7 kB a thread in all).
@Suite struct GLibLoopThreadTests {
    /// The thread that runs `loop`'s callbacks.
    static func threadOf(_ loop: GLibLoopThread) -> String? {
        final class Box: @unchecked Sendable {
            var tid = ""
            let done = DispatchSemaphore(value: 0)
        }
        let box = Box()
        let record: GSourceFunc = { user in
            guard let user else { return 0 }
            let box = Unmanaged<Box>.fromOpaque(user).takeUnretainedValue()
            // Kernel thread ids are not reused soon (pthread_t values are).
            box.tid = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? "?"
            box.done.signal()
            return 0  // G_SOURCE_REMOVE
        }
        let source = g_idle_source_new()
        g_source_set_callback(source, record, Unmanaged.passUnretained(box).toOpaque(), nil)
        g_source_attach(source, loop.context)
        g_source_unref(source)
        guard box.done.wait(timeout: .now() + 10) == .success else { return nil }
        return box.tid
    }

    @Test func aStoppedLoopsThreadRunsTheNextLoop() throws {
        let workers = LoopWorkers(maxIdle: 2)
        let first = GLibLoopThread(name: "test-glib", workers: workers)
        let thread = try #require(Self.threadOf(first))
        first.stop()
        for _ in 0..<5 {
            let next = GLibLoopThread(name: "test-glib", workers: workers)
            #expect(Self.threadOf(next) == thread)
            next.stop()
        }
    }

    @Test func loopsAtOnceHaveThreadsOfTheirOwnAndOnlyMaxIdleAreKept() throws {
        let workers = LoopWorkers(maxIdle: 2)
        let loops = (0..<4).map { _ in GLibLoopThread(name: "test-glib", workers: workers) }
        let threads = loops.compactMap(Self.threadOf)
        #expect(Set(threads).count == 4, "one thread per running loop")
        for loop in loops { loop.stop() }
        // Two were kept; four loops now need two new threads.
        let again = (0..<4).map { _ in GLibLoopThread(name: "test-glib", workers: workers) }
        let reused = Set(again.compactMap(Self.threadOf)).intersection(threads)
        #expect(reused.count == 2)
        for loop in again { loop.stop() }
    }
}
