import TestSupport
import Testing

@testable import CarrierSessions

/// The reading side's pends and resumes, without a channel: each change
/// yields at most one signal, and the signals alternate pend, resume, pend…
@Suite struct ReadWindowTests {
    func window() -> ReadWindow { ReadWindow(pendAbove: 1000, resumeBelow: 250) }

    @Test func pendsPastTheMarkAndResumesBelowTheLowOne() {
        var window = window()
        #expect(window.received(600) == nil)
        #expect(window.received(600) == .pend)
        #expect(window.received(600) == nil, "one pend, however much more arrives")
        #expect(window.unread == 1800)
        #expect(window.read(1000) == nil)
        #expect(window.read(500) == nil, "300 unread is not below 250 yet")
        #expect(window.read(100) == .resume)
        #expect(window.read(200) == nil)
        #expect(!window.isPended)
    }

    @Test func aPendByHandHoldsTheWriterAfterRoomReturns() {
        var window = window()
        #expect(window.pendByHand() == .pend)
        #expect(window.pendByHand() == nil)
        #expect(window.received(2000) == nil, "pended already")
        #expect(window.read(2000) == nil, "room again, but the application still pends")
        #expect(window.resumeByHand() == .resume)
        #expect(window.resumeByHand() == nil)
    }

    @Test func aResumeByHandWaitsForRoom() {
        var window = window()
        #expect(window.received(2000) == .pend)
        #expect(window.pendByHand() == nil)
        #expect(window.resumeByHand() == nil, "still no room")
        #expect(window.isPended)
        #expect(window.read(1900) == .resume)
    }

    @Test func anUnboundedWindowNeverPends() {
        var window = ReadWindow(pendAbove: .max, resumeBelow: 250)
        #expect(window.received(1 << 30) == nil)
        window.discarded(1 << 30)
        #expect(window.unread == 0)
        #expect(window.read(10) == nil)
    }

    /// Whatever the order of arrivals, reads and the application's calls, the
    /// signals alternate, and the last one says whether the writer is pended:
    /// what the writer last heard is the truth, provided the signals leave in
    /// the order they were decided (which `StreamChannel` holds its lock for).
    @Test func signalsAlternateAndTheLastOneIsTheState() {
        for seed in 0..<200 {
            // Seeded: a failing order can be replayed.
            var generator = SplitMix(seed: UInt64(seed))
            var window = window()
            var last = ReadWindow.Signal.resume
            for _ in 0..<200 {
                let signal: ReadWindow.Signal? =
                    switch Int.random(in: 0..<10, using: &generator) {
                    case 0: window.pendByHand()
                    case 1: window.resumeByHand()
                    case 2...5: window.received(Int.random(in: 1...400, using: &generator))
                    default: window.read(min(window.unread, Int.random(in: 1...400, using: &generator)))
                    }
                if let signal {
                    #expect(signal != last)
                    last = signal
                }
                #expect((last == .pend) == window.isPended)
            }
        }
    }
}
