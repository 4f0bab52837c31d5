import Testing

@testable import RtcCongestion

/// The delay-based rate controller on chosen usages and times (µs).
@Suite struct AimdRateControlTests {
    @Test func normalGrowsEightPercentASecond() {
        var control = AimdRateControl(start: 300_000, minimum: 30_000, maximum: 2_000_000)
        control.update(.normal, throughput: nil, at: 0)
        for step in 1...10 { control.update(.normal, throughput: nil, at: Int64(step) * 100_000) }
        #expect(control.state == .increase)
        // Ten steps of 0.1 s compound to 1.08 over the second.
        #expect(abs(control.rate - 300_000 * 1.08) < 1_000)
    }

    @Test func overuseCutsToEightyFivePercentOfWhatGotThroughLessFiveKbps() {
        var control = AimdRateControl(start: 1_000_000, minimum: 30_000, maximum: 2_000_000)
        control.update(.overusing, throughput: 400_000, at: 0)
        #expect(control.rate == 335_000)
        #expect(control.state == .hold)
        #expect(control.capacity.estimate == 400)
    }

    @Test func underuseHolds() {
        var control = AimdRateControl(start: 500_000, minimum: 30_000, maximum: 2_000_000)
        control.update(.normal, throughput: nil, at: 0)
        control.update(.underusing, throughput: nil, at: 1_000_000)
        #expect(control.state == .hold)
        #expect(control.rate == 500_000)
    }

    @Test func neverGrowsFarAboveWhatWasAcknowledged() {
        var control = AimdRateControl(start: 100_000, minimum: 30_000, maximum: 5_000_000)
        control.update(.normal, throughput: 100_000, at: 0)
        for second in 1...60 { control.update(.normal, throughput: 100_000, at: Int64(second) * 1_000_000) }
        #expect(control.rate <= AimdRateControl.throughputLimit(100_000))
    }

    @Test func nearAKnownCapacityGrowthIsAdditive() {
        var multiplicative = AimdRateControl(start: 1_000_000, minimum: 30_000, maximum: 5_000_000)
        var additive = multiplicative
        additive.update(.overusing, throughput: 1_182_353, at: 0)  // 0.85 x that less 5 kbit/s is 1 Mbit/s
        additive.update(.normal, throughput: nil, at: 0)
        multiplicative.update(.normal, throughput: nil, at: 0)
        additive.update(.normal, throughput: nil, at: 1_000_000)
        multiplicative.update(.normal, throughput: nil, at: 1_000_000)
        #expect(additive.rate - 1_000_000 < multiplicative.rate - 1_000_000)
        #expect(additive.rate > 1_000_000)
    }

    /// libwebrtc's rate near a known capacity: a 400 kbit/s frame at 30 fps is two packets of
    /// 6,667 bits; with no round trip the response time is 2 x 100 ms, so 33 kbit/s a second.
    @Test func nearAKnownCapacityItGrowsHalfAPacketPerResponseTime() {
        var control = AimdRateControl(start: 1_000_000, minimum: 30_000, maximum: 5_000_000)
        control.update(.overusing, throughput: 476_471, at: 0)  // to 400 kbit/s
        control.rtt = 0
        control.update(.normal, throughput: nil, at: 0)
        control.update(.normal, throughput: nil, at: 1_000_000)
        #expect(abs(control.rate - 433_333) < 100)
    }

    @Test func staysBetweenItsBounds() {
        var control = AimdRateControl(start: 50_000, minimum: 30_000, maximum: 60_000)
        control.update(.overusing, throughput: 1_000, at: 0)
        #expect(control.rate == 30_000)
        control.set(rate: 10_000_000, at: 1)
        #expect(control.rate == 60_000)
    }
}
