import CNice
import Foundation

/// A GLib main context with its loop running on a thread this layer owns.
/// libnice emits its signals and receive callbacks on this thread.
///
/// Each loop gets a context of its own, but not a thread of its own: a
/// thread whose loop stopped waits (`LoopWorkers`) for the next one. A new
/// thread per ICE agent cost memory that no one gives back: GnuTLS keeps a
/// random-number state per thread that libnice's STUN checks create and that
/// outlives the thread (about 190 bytes a call in heap profiles of a bot,
/// growing linearly with its calls), and GLib keeps per-thread caches.
final class GLibLoopThread: @unchecked Sendable {
    // Set once in init, read-only afterwards; GLib's own locking guards the objects.
    let context: OpaquePointer
    private let loop: OpaquePointer
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the loop on an idle thread of `workers`, or on a new one named `name`.
    init(name: String, workers: LoopWorkers = .shared) {
        context = g_main_context_new()
        loop = g_main_loop_new(context, 0)
        workers.run(LoopWorkers.Job(context: context, loop: loop, finished: finished), name: name)
    }

    /// Stops the loop and waits until it has returned: no callback runs after
    /// this returns, and the thread no longer touches this context.
    /// The quit is posted as a source on the loop's own context, so it takes
    /// effect even if the thread has not entered `g_main_loop_run` yet (a plain
    /// `g_main_loop_quit` before `run` would be lost, and this would wait forever).
    func stop() {
        let quit: GSourceFunc = { loop in
            g_main_loop_quit(OpaquePointer(loop))
            return 0  // G_SOURCE_REMOVE
        }
        let source = g_idle_source_new()
        g_source_set_callback(source, quit, UnsafeMutableRawPointer(loop), nil)
        g_source_attach(source, context)
        g_source_unref(source)
        finished.wait()
        g_main_loop_unref(loop)
        g_main_context_unref(context)
    }
}

/// The threads that run GLib loops, kept for the next loop once theirs
/// stopped (at most `maxIdle` wait; more end, as a burst of calls ends).
final class LoopWorkers: @unchecked Sendable {
    /// The process's: a few calls at once reuse all their threads.
    static let shared = LoopWorkers(maxIdle: 4)
    let maxIdle: Int

    init(maxIdle: Int) { self.maxIdle = maxIdle }

    /// A loop to run until it quits, then say so.
    struct Job: @unchecked Sendable {
        let context: OpaquePointer
        let loop: OpaquePointer
        let finished: DispatchSemaphore
    }

    /// One thread and its mailbox: the job `run` sets before it signals `ready`.
    private final class Worker: @unchecked Sendable {
        let ready = DispatchSemaphore(value: 0)
        var job: Job?
    }

    // Guarded by `lock`.
    private let lock = NSLock()
    private var idle: [Worker] = []

    /// Runs `job` on an idle thread, or on a new one named `name`.
    func run(_ job: Job, name: String) {
        let reused = lock.withLock { idle.popLast() }
        let worker = reused ?? Worker()
        worker.job = job
        if reused == nil {
            let thread = Thread { [self] in serve(worker) }
            thread.name = name
            thread.start()
        }
        worker.ready.signal()
    }

    private func serve(_ worker: Worker) {
        while true {
            worker.ready.wait()
            guard let job = worker.job else { return }
            worker.job = nil
            g_main_context_push_thread_default(job.context)
            g_main_loop_run(job.loop)
            g_main_context_pop_thread_default(job.context)
            // Back in the pool before the owner hears of the stop, so a call
            // that ends and the next that starts share the thread.
            let kept = lock.withLock { () -> Bool in
                guard idle.count < maxIdle else { return false }
                idle.append(worker)
                return true
            }
            job.finished.signal()
            if !kept { return }
        }
    }
}
