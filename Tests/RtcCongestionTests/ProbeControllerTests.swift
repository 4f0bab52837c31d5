import Testing

@testable import RtcCongestion

/// When probes are asked for, and how big their packets are (µs, bit/s).
@Suite struct ProbeControllerTests {
    @Test func probesThreeTimesTheStartRate() {
        var probes = ProbeController(start: 300_000, maximum: 10_000_000)
        #expect(probes.next()?.rate == 900_000)
        #expect(probes.next() == nil)
    }

    @Test func noStartProbeFarAboveTheMaximum() {
        var capped = ProbeController(start: 300_000, maximum: 500_000)
        #expect(capped.next()?.rate == 500_000)  // 3x capped
        var none = ProbeController(start: 300_000, maximum: 400_000)
        #expect(none.next() == nil)  // 3x is more than twice the maximum
    }

    @Test func afterALargeDropProbesEveryTwoSecondsForHalfAMinute() {
        var probes = ProbeController(start: 300_000, maximum: 10_000_000)
        while probes.next() != nil {}
        probes.track(target: 2_000_000, at: 0)
        probes.track(target: 300_000, at: 1_000_000)  // below 66% of the peak
        var rates: [Double] = []
        var now: Int64 = 1_000_000
        while now < 40_000_000 {
            now += 500_000
            probes.track(target: 300_000, at: now)
            if let probe = probes.next() { rates.append(probe.rate) }
        }
        // Three times the target, not 85% of the peak: 7 KB of burst was 190 ms
        // of a 300 kbit/s link's queue every two seconds.
        #expect(rates.allSatisfy { $0 == 900_000 })
        #expect((14...15).contains(rates.count), "\(rates.count) probes")
    }

    @Test func aRecoveredTargetStopsTheProbes() {
        var probes = ProbeController(start: 300_000, maximum: 10_000_000)
        while probes.next() != nil {}
        probes.track(target: 2_000_000, at: 0)
        probes.track(target: 300_000, at: 1_000_000)
        probes.track(target: 1_700_000, at: 2_000_000)
        probes.track(target: 1_700_000, at: 6_000_000)
        #expect(probes.next() == nil)
    }

    @Test func aProbeThePathCarriedIsFollowedByOneAtTwiceTheRate() {
        var probes = ProbeController(start: 300_000, maximum: 2_500_000)
        let first = probes.next()
        probes.measured(cluster: first?.id ?? 0, rate: 850_000)  // 94% of 900 kbit/s arrived: probe further
        let second = probes.next()
        #expect(second?.rate == 1_700_000)
        probes.measured(cluster: second?.id ?? 0, rate: 1_650_000)
        let third = probes.next()
        #expect(third?.rate == 2_500_000)  // twice 1.65 Mbit/s, at most the maximum
        // The path carried 1 Mbit/s of it: that is its size, no further probe.
        probes.measured(cluster: third?.id ?? 0, rate: 1_000_000)
        #expect(probes.next() == nil)
        probes.measured(cluster: 99, rate: 5_000_000)  // a burst it never asked for
        #expect(probes.next() == nil)
    }

    @Test func aRecoveryProbeClimbsBackToThePeakAndNoFurther() {
        var probes = ProbeController(start: 300_000, maximum: 10_000_000)
        while probes.next() != nil {}
        probes.track(target: 2_000_000, at: 0)
        probes.track(target: 300_000, at: 1_000_000)
        probes.track(target: 300_000, at: 3_000_000)
        let recovery = probes.next()
        #expect(recovery?.rate == 900_000)
        // Carried whole, the first is not taken but sent again: a stalled
        // receiver can make a burst seem to arrive at twice the link's rate.
        let first = probes.measured(cluster: recovery?.id ?? 0, rate: 880_000)
        #expect(!first)
        let repeated = probes.next()
        #expect(repeated?.rate == 900_000)
        // Carried again: the estimate takes it, and the next probe is at twice
        // what arrived, up to 85% of the peak.
        let carried = probes.measured(cluster: repeated?.id ?? 0, rate: 880_000)
        #expect(carried)
        let higher = probes.next()
        #expect(higher?.rate == 1_700_000)
        let carriedHigher = probes.measured(cluster: higher?.id ?? 0, rate: 1_650_000)
        #expect(carriedHigher)
        let peak = probes.next()
        #expect(peak?.rate == 2_000_000)
        let atPeak = probes.measured(cluster: peak?.id ?? 0, rate: 2_000_000)  // and no further
        #expect(atPeak)
        #expect(probes.next() == nil)
        // A recovery probe the link did not carry (under 80% of it arrived) is neither
        // followed nor taken as the estimate: it measured a share of a link now shared.
        probes.track(target: 300_000, at: 5_000_000)
        let again = probes.next()
        #expect(again != nil)
        let shared = probes.measured(cluster: again?.id ?? 0, rate: 500_000)
        #expect(!shared)
        #expect(probes.next() == nil)
        // One that arrived at twice the target or more does count: the link is back,
        // below the rate before the drop.
        probes.track(target: 300_000, at: 7_000_000)
        let third = probes.next()
        let unconfirmed = probes.measured(cluster: third?.id ?? 0, rate: 650_000)
        #expect(!unconfirmed)
        let confirmation = probes.next()
        #expect(confirmation?.rate == third?.rate)
        let back = probes.measured(cluster: confirmation?.id ?? 0, rate: 650_000)
        #expect(back)
        while probes.next() != nil {}  // its climb, not measured here
        // A first probe that seemed carried and a repeat that was not: nothing is taken.
        probes.track(target: 300_000, at: 9_000_000)
        let stalled = probes.next()
        let seemed = probes.measured(cluster: stalled?.id ?? 0, rate: 900_000)
        let confirming = probes.next()
        let notCarried = probes.measured(cluster: confirming?.id ?? 0, rate: 300_000)
        #expect(!seemed && !notCarried)
        #expect(probes.next() == nil)
    }

    @Test func aSlowLinkStopsTheStartProbing() {
        var probes = ProbeController(start: 300_000, maximum: 2_500_000)
        let first = probes.next()
        probes.measured(cluster: first?.id ?? 0, rate: 380_000)  // a 400 kbit/s uplink
        #expect(probes.next() == nil)
    }

    @Test func aSlowLinkIsProbedWithAFewSmallPackets() {
        let slow = ProbeCluster(id: 1, rate: 300_000, packets: 5, duration: 15_000)
        #expect(slow.packetSize == 112)
        #expect(slow.packetCount == 5)
        let fast = ProbeCluster(id: 2, rate: 10_000_000, packets: 5, duration: 15_000)
        #expect(fast.packetSize == 1200)
        #expect(fast.packetCount == 15)
    }
}
