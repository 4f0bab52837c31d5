import CNice
import Foundation

/// A GLib main context with its loop running on a thread this layer owns.
/// libnice emits its signals and receive callbacks on this thread.
final class GLibLoopThread: @unchecked Sendable {
    // Set once in init, read-only afterwards; GLib's own locking guards the objects.
    let context: OpaquePointer
    private let loop: OpaquePointer
    private let finished = DispatchSemaphore(value: 0)

    init(name: String) {
        context = g_main_context_new()
        loop = g_main_loop_new(context, 0)
        let thread = Thread { [self] in
            g_main_context_push_thread_default(context)
            g_main_loop_run(loop)
            g_main_context_pop_thread_default(context)
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Stops the loop and waits for its thread to end: no callback runs after this returns.
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
