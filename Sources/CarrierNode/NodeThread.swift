import AsyncExtras
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The thread a node runs on: the `Carrier` actor's executor, and the wait
/// of toxcore's loop, as a plain toxcore client runs it (iterate, then wait
/// for the socket or the next interval).
///
/// Before, the actor ran on Swift's shared pool, a dispatch timer ended each
/// sleep of the loop, and a dispatch read source watched the socket: each
/// iteration crossed three threads. A receiver at 30 MB/s spent a quarter of
/// its CPU in that (the dispatch manager's thread, futex wakes and context
/// switches, perf) and twice raw toxcore's CPU per megabyte. Here one thread
/// runs the actor's jobs in order and, when it has none, waits in `poll` on
/// a pipe (a job from another thread), toxcore's UDP socket, and the loop's
/// deadline (whole milliseconds, rounded up: toxcore's intervals are too).
///
/// Threading: `enqueue` and `wake` may be called from any thread; `sleep`,
/// `watch` and `rearm` only from the actor (so from this thread). The thread
/// ends after `finish` (the actor's deinit), once its queue is empty.
final class NodeThread: SerialExecutor, @unchecked Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var finished = false
        /// The thread is in `poll` or about to be: a new job must write to the pipe.
        var waiting = false
        /// The loop's sleep and when it ends.
        var sleeper: CheckedContinuation<Void, Never>?
        var deadline: ContinuousClock.Instant?
        /// A wake that came while the loop was not asleep: its next sleep returns at once.
        var wakePending = false
    }
    private let state = Locked(State())
    /// A pipe whose read end the thread polls; a byte written wakes it.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// The thread, once it runs.
    private let current = Locked<pthread_t?>(nil)
    /// The socket watched (`watch`; read and set only by the actor, on this thread).
    private(set) var socket: SocketWatch?
    /// Whether a datagram may wake the loop (the thread's own).
    private var socketArmed = false

    init(name: String) {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
        }
        (wakeRead, wakeWrite) = (ends[0], ends[1])
        let thread = Thread { [self] in
            Self.nameCurrentThread(name)
            run()
        }
        thread.start()
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    // MARK: SerialExecutor

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let signal = state.withLock { state in
            state.jobs.append(job)
            return state.waiting
        }
        if signal { poke() }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    // MARK: The loop's wait

    /// Waits until `duration` has passed, `wake` is called, or a datagram
    /// arrives on the watched socket (armed). On the actor: it stays on the
    /// caller's executor (`isolation`), so the loop never leaves this thread.
    func sleep(for duration: Duration, isolation: isolated (any Actor)? = #isolation) async {
        await withCheckedContinuation(isolation: isolation) { (continuation: CheckedContinuation<Void, Never>) in
            let (now, waiting) = state.withLock { state -> (Bool, Bool) in
                if state.wakePending {
                    state.wakePending = false
                    return (true, false)
                }
                state.sleeper = continuation
                state.deadline = .now + duration
                return (false, state.waiting)
            }
            if now { continuation.resume() }
            if waiting { poke() }  // called off this thread, which waits without the deadline
        }
    }

    /// Whether the loop sleeps now.
    var isAsleep: Bool { state.withLock { $0.sleeper != nil } }

    /// Ends the loop's sleep now, or makes its next one return at once. Any thread.
    func wake() {
        let sleeper = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let sleeper = state.sleeper else {
                state.wakePending = true
                return nil
            }
            state.sleeper = nil
            state.deadline = nil
            return sleeper
        }
        sleeper?.resume()  // enqueues the loop's job here, which pokes the thread if it waits
    }

    /// Watches `socket` (nil: none) for datagrams that end the loop's sleep. On the actor.
    func watch(_ socket: SocketWatch?) {
        self.socket = socket
        socketArmed = socket != nil
    }

    /// Lets the next datagram wake the loop again (after toxcore read the socket). On the actor.
    func rearm() { socketArmed = socket != nil }

    /// Lets the thread end once its queue is empty (the actor is gone).
    func finish() {
        state.withLock { $0.finished = true }
        poke()
    }

    /// Wakes the thread from its `poll` (a full pipe already will).
    private func poke() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: The thread

    /// Whether the caller is on this thread.
    var isCurrent: Bool { current.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false } }

    func checkIsolated() {
        precondition(isCurrent, "not on the node's thread")
    }

    /// Foundation keeps a name set before start to itself on Linux, so the
    /// thread names itself (what pthread_setname_np does for another thread;
    /// Glibc's module does not export it): top, perf and gdb then show it.
    /// The kernel keeps 15 bytes.
    private static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    private func run() {
        current.withLock { $0 = pthread_self() }
        while true {
            let (jobs, finished, deadline) = state.withLock { state in
                let jobs = state.jobs
                state.jobs.removeAll(keepingCapacity: true)
                state.waiting = jobs.isEmpty
                return (jobs, state.finished, state.deadline)
            }
            if !jobs.isEmpty {
                for job in jobs { job.runSynchronously(on: asUnownedSerialExecutor()) }
                continue
            }
            if finished { return }
            wait(until: deadline)
        }
    }

    /// Waits in `poll` for a job, a datagram (when armed) or the loop's deadline, and ends the sleep on the last two.
    private func wait(until deadline: ContinuousClock.Instant?) {
        var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        if socketArmed, let socket { fds.append(pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)) }
        var timeout: Int32 = -1
        if let deadline {
            let left = max(deadline - .now, .zero).components
            let milliseconds = left.seconds * 1000 + (left.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            timeout = Int32(clamping: milliseconds)
        }
        let ready = poll(&fds, nfds_t(fds.count), timeout)
        if ready > 0, fds[0].revents != 0 {
            withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { bytes in
                while read(wakeRead, bytes.baseAddress, bytes.count) > 0 {}
            }
        }
        var datagram = false
        if ready > 0, fds.count > 1, fds[1].revents != 0 {
            socketArmed = false  // toxcore reads it in tox_iterate; `rearm` then
            socket?.datagramArrived()
            datagram = true
        }
        let sleeper = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.waiting = false
            if datagram, state.sleeper == nil { state.wakePending = true }  // as `wake`
            guard let due = state.deadline, datagram || due <= .now else { return nil }
            state.deadline = nil
            defer { state.sleeper = nil }
            return state.sleeper
        }
        sleeper?.resume()
    }
}
