import RtcCongestion
import Testing

@Suite struct RetransmissionBudgetTests {
    /// At 300 kbit/s, a second of NACKs for 1200-byte packets gets 31 of them
    /// resent (37.5 kB), and the next second as many again.
    @Test func repairsInASecondStayWithinTheTarget() {
        var budget = RetransmissionBudget()
        var allowed = 0
        for index in 0..<200 {
            let now = Int64(index) * 5_000  // 200 NACKed packets over a second
            if budget.allow(ssrc: 1, sequence: UInt16(index), bytes: 1200, at: now, target: 300_000, roundTrip: 50_000)
            {
                allowed += 1
            }
        }
        #expect(allowed == 31)
        var later = 0
        for index in 0..<200 {
            let now = 1_000_000 + Int64(index) * 5_000
            if budget.allow(
                ssrc: 1, sequence: UInt16(200 + index), bytes: 1200, at: now, target: 300_000, roundTrip: 50_000)
            {
                later += 1
            }
        }
        #expect((31...32).contains(later), "\(later)")
    }

    /// What repairs took over the last second, for the video encoder's share to leave room for.
    @Test func theRepairRateCountsTheLastSecond() {
        var budget = RetransmissionBudget()
        #expect(budget.rate(at: 0) == 0)
        for index in 0..<10 {  // 10 packets of 1000 bytes in the first half second
            _ = budget.allow(
                ssrc: 1, sequence: UInt16(index), bytes: 1000, at: Int64(index) * 50_000, target: 1_000_000,
                roundTrip: 10_000)
        }
        #expect(budget.rate(at: 500_000) == 80_000)
        #expect(budget.rate(at: 1_200_000) == 48_000)  // the 4 sent before 0.2 s have left the window
        #expect(budget.rate(at: 2_000_000) == 0)
    }

    /// The same packet goes again only after a round trip (at least 5 ms).
    @Test func aPacketIsResentOncePerRoundTrip() {
        var budget = RetransmissionBudget()
        // (stream, time µs, round trip µs or nil): whether packet 9 of the stream may go.
        let steps: [(UInt32, Int64, Int64?)] = [
            (7, 0, 40_000), (7, 39_000, 40_000), (8, 39_000, 40_000), (7, 40_000, 40_000),
            // A loopback's round trip of 0.2 ms still waits 5 ms; an unknown one 100 ms.
            (7, 44_000, 200), (7, 45_000, 200), (7, 144_000, nil), (7, 145_000, nil),
        ]
        let allowed = steps.map { ssrc, time, roundTrip in
            budget.allow(ssrc: ssrc, sequence: 9, bytes: 1000, at: time, target: nil, roundTrip: roundTrip)
        }
        #expect(allowed == [true, false, true, true, false, true, false, true])
    }

    /// Without a target (no congestion control) only the round-trip rule holds.
    @Test func withoutATargetEveryNewPacketGoes() {
        var budget = RetransmissionBudget()
        let all = (0..<1000).allSatisfy { index in
            budget.allow(ssrc: 1, sequence: UInt16(index), bytes: 1200, at: Int64(index), target: nil, roundTrip: 1000)
        }
        #expect(all)
    }
}
