import Testing

@testable import RtcCongestion

/// Probe bursts as padding-only RTP packets.
@Suite struct ProbeBurstTests {
    @Test func carriesTheClustersBytesAtItsRate() {
        let cluster = ProbeCluster(id: 1, rate: 1_800_000, packets: 5, duration: 15_000)  // 3,375 bytes, 675 each
        let sends = ProbeBurst.schedule(cluster, overhead: 28)
        // 255 bytes of padding at most: 12 packets of 283 bytes, each 1.26 ms after the last.
        #expect(sends.count == 12)
        #expect(sends.allSatisfy { $0.padding == 255 })
        #expect(sends.prefix(3).map(\.offset) == [0, 1257, 2515])
    }

    @Test func aSlowLinksProbeIsAFewSmallPackets() {
        // 255 kbit/s for 15 ms: 478 bytes, asked as five packets of 100.
        let sends = ProbeBurst.schedule(ProbeCluster(id: 1, rate: 255_000, packets: 5, duration: 15_000), overhead: 28)
        #expect(sends.count == 5)
        #expect(sends.allSatisfy { $0.padding == 72 })
    }

    @Test func neverAFlood() {
        let sends = ProbeBurst.schedule(
            ProbeCluster(id: 1, rate: 50_000_000, packets: 5, duration: 15_000), overhead: 28, limit: 64)
        #expect(sends.count == 64)
        #expect(ProbeBurst.schedule(ProbeCluster(id: 2, rate: 0, packets: 5, duration: 15_000), overhead: 28).isEmpty)
    }
}
