import Testing

@testable import RtcCongestion

/// The delay-gradient detector on hand-made group deltas (ms).
@Suite struct TrendlineEstimatorTests {
    /// Feeds `count` groups 5 ms apart on the sender whose gaps grew by `growth` ms on the way.
    private func feed(_ detector: inout TrendlineEstimator, count: Int, growth: Double, from start: Double = 0)
        -> [BandwidthUsage]
    {
        (0..<count).map { index in
            detector.update(arrivalDelta: 5 + growth, sendDelta: 5, arrivalTime: start + Double(index) * (5 + growth))
        }
    }

    @Test func slopeIsTheLeastSquaresLine() throws {
        let line = (0..<10).map { (x: Double($0), y: 2 * Double($0) + 1) }
        #expect(try #require(TrendlineEstimator.slope(line)) == 2)
        #expect(TrendlineEstimator.slope([(1, 1), (1, 5)]) == nil)
    }

    @Test func steadyDelayIsNormal() {
        var detector = TrendlineEstimator()
        let states = feed(&detector, count: 100, growth: 0)
        #expect(states.allSatisfy { $0 == .normal })
        #expect(detector.trend == 0)
    }

    @Test func growingQueueIsOveruseAfterTheWindowFills() {
        var detector = TrendlineEstimator()
        let states = feed(&detector, count: 60, growth: 1)
        // Nothing can be said before the window of 20 groups holds a slope.
        #expect(states.prefix(TrendlineEstimator.windowSize - 1).allSatisfy { $0 == .normal })
        #expect(states.contains(.overusing))
        #expect(detector.trend > 0)
    }

    @Test func drainingQueueIsUnderuse() {
        var detector = TrendlineEstimator()
        _ = feed(&detector, count: 40, growth: 1)
        let states = feed(&detector, count: 40, growth: -2, from: 240)
        #expect(states.last == .underusing)
    }

    @Test func thresholdFollowsTheTrendBothWaysAndStaysInBounds() {
        // A small lasting gradient (modified trend about 9): the threshold comes down towards it.
        var small = TrendlineEstimator()
        _ = feed(&small, count: 400, growth: 0.2)
        #expect(small.threshold < 12.5 && small.threshold > 8)
        // One a little over the threshold, as a competing TCP flow causes: it goes up, so we are not starved.
        var larger = TrendlineEstimator()
        _ = feed(&larger, count: 400, growth: 0.4)
        #expect(larger.threshold > 12.5)
        #expect((6...600).contains(larger.threshold))
    }
}
