import Testing

@testable import RtcCongestion

/// The loss-based controller on chosen feedback (times in µs).
@Suite struct LossBasedControlTests {
    @Test func waitsForTwentyPacketsAndHalfASecond() {
        var control = LossBasedControl(start: 500_000)
        control.add(received: 5, lost: 5, at: 0, rtt: 50_000, ceiling: 1e9)
        control.add(received: 5, lost: 5, at: 400_000, rtt: 50_000, ceiling: 1e9)
        #expect(control.rate == 500_000)
        #expect(control.lastLoss == 0)
        control.add(received: 5, lost: 5, at: 500_000, rtt: 50_000, ceiling: 1e9)
        #expect(control.lastLoss == 0.5)
        #expect(control.rate == 375_000)  // cut by half the loss
    }

    @Test func highLossCutsOncePerRoundTripAndThreeHundredMilliseconds() {
        var control = LossBasedControl(start: 1_000_000)
        control.add(received: 0, lost: 0, at: 0, rtt: 100_000, ceiling: 1e9)
        control.add(received: 80, lost: 20, at: 500_000, rtt: 100_000, ceiling: 1e9)
        #expect(control.rate == 900_000)
        // The next report comes 0.3 s later, before the 0.4 s are up: no second cut.
        control.add(received: 80, lost: 20, at: 800_000, rtt: 100_000, ceiling: 1e9)
        #expect(control.rate == 900_000)
        control.add(received: 80, lost: 20, at: 1_300_000, rtt: 100_000, ceiling: 1e9)
        #expect(control.rate == 810_000)
    }

    @Test func lowLossGrowsEightPercentOverTheLowestOfTheLastSecond() {
        var control = LossBasedControl(start: 400_000)
        control.add(received: 0, lost: 0, at: 0, rtt: 0, ceiling: 1e9)
        control.add(received: 100, lost: 0, at: 500_000, rtt: 0, ceiling: 1e9)
        #expect(control.rate == 400_000 * 1.08 + 1000)
    }

    @Test func moderateLossHoldsAndTheCeilingCaps() {
        var control = LossBasedControl(start: 400_000)
        control.add(received: 0, lost: 0, at: 0, rtt: 0, ceiling: 1e9)
        control.add(received: 95, lost: 5, at: 500_000, rtt: 0, ceiling: 1e9)
        #expect(control.rate == 400_000)
        control.add(received: 100, lost: 0, at: 1_000_000, rtt: 0, ceiling: 300_000)
        #expect(control.rate == 300_000)
    }
}
