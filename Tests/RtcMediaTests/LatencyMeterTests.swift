import RtcMedia
import Testing

@Suite struct LatencyMeterTests {
    @Test func reportsTheMedianAndP95OfTheRecentDelays() {
        var meter = LatencyMeter()
        #expect(meter.median == nil && meter.p95 == nil)
        for index in 0..<100 { meter.note(Double(index) / 1000) }  // 0 … 99 ms
        #expect(abs((meter.median ?? 0) - 0.050) < 0.0011)
        #expect(abs((meter.p95 ?? 0) - 0.094) < 0.0011)
    }

    @Test func keepsOnlyTheLastDelaysAndDropsImpossibleOnes() {
        var meter = LatencyMeter()
        for _ in 0..<LatencyMeter.capacity { meter.note(0.5) }
        for _ in 0..<LatencyMeter.capacity { meter.note(0.010) }
        #expect(meter.median == 0.010 && meter.p95 == 0.010)
        meter.note(3600)  // a clock that jumped
        meter.note(.nan)
        #expect(meter.p95 == 0.010)
    }
}
