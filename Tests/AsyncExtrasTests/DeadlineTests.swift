import AsyncExtras
import Testing

/// `withDeadline` returns at its deadline even when the body ignores
/// cancellation, and hands what the body returns later to `late`.
@Suite struct DeadlineTests {
    /// A value that arrives when the test says so, whatever cancellation says.
    final class Gate: Sendable {
        let stream: AsyncStream<Int>
        let sink: AsyncStream<Int>.Continuation
        init() { (stream, sink) = AsyncStream<Int>.makeStream() }
        func wait() async -> Int? {
            // Ends only when the test yields: a detached task waits, out of reach of cancellation.
            await withCheckedContinuation { continuation in
                Task.detached { [stream] in
                    for await value in stream {
                        continuation.resume(returning: value)
                        return
                    }
                    continuation.resume(returning: nil)
                }
            }
        }
    }

    @Test func aBodyThatIgnoresCancellationDoesNotHoldTheCaller() async {
        let gate = Gate()
        let late = AsyncStream<Int>.makeStream()
        let answer = await withDeadline(.milliseconds(50), late: { late.continuation.yield($0) }) {
            await gate.wait()
        }
        #expect(answer == nil)
        // What the body returns after the deadline goes to `late`.
        gate.sink.yield(7)
        let handed = await late.stream.first(within: .seconds(10)) { $0 }
        #expect(handed == 7)
    }

    @Test func aQuickBodyAnswers() async {
        let answer = await withDeadline(.seconds(10)) { () async -> Int? in 42 }
        #expect(answer == 42)
    }
}
