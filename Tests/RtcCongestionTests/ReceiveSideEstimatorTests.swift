import Testing

@testable import RtcCongestion

/// The receiver's estimate on a simulated link: frames at 30 fps, each cut
/// into 1200-byte packets sent together, leaving the link's queue at its rate.
@Suite struct ReceiveSideEstimatorTests {
    struct Link {
        var capacity: Double  // bit/s
        var freeAt: Int64 = 0  // µs: when the link has sent what it holds
        var timestamp: UInt32 = 0
        var sequence: UInt16 = 0
        /// Every how many packets one is lost on the way (0: none).
        var loseEvery = 0

        /// One frame of `bytes` captured at `time` (µs): each packet's arrival.
        mutating func frame(_ bytes: Int, at time: Int64, into estimator: inout ReceiveSideEstimator) {
            var left = bytes
            while left > 0 {
                let size = min(left, 1200)
                left -= size
                freeAt = max(freeAt, time) + Int64(Double(size * 8) / capacity * 1_000_000)
                sequence &+= 1
                if loseEvery > 0, sequence % UInt16(loseEvery) == 0 { continue }
                estimator.received(
                    ssrc: 7, sequence: sequence, timestamp: timestamp, clockRate: 90_000, size: size,
                    at: freeAt + 20_000)
            }
            timestamp &+= 3000
        }
    }

    /// `seconds` of frames of `bytes` from `start` (µs); the REMBs due each 100 ms, with their times.
    private func run(
        _ estimator: inout ReceiveSideEstimator, _ link: inout Link, frameBytes: Int, seconds: Int, from start: Int64
    ) -> [(at: Int64, bitrate: UInt64)] {
        var rembs: [(at: Int64, bitrate: UInt64)] = []
        for frame in 0..<(seconds * 30) {
            let time = start + Int64(frame) * 33_333
            link.frame(frameBytes, at: time, into: &estimator)
            if frame % 3 == 0, let remb = estimator.rembDue(at: time) { rembs.append((time, remb)) }
        }
        return rembs
    }

    @Test func aSenderAboveTheLinkIsToldToSlowDownAtOnce() {
        var estimator = ReceiveSideEstimator(start: 1_500_000)
        var link = Link(capacity: 500_000)
        // 1 Mbit/s of frames (4166 bytes at 30 fps) into 500 kbit/s: the queue grows.
        let rembs = run(&estimator, &link, frameBytes: 4166, seconds: 5, from: 0)
        #expect(estimator.estimate < 500_000 && estimator.estimate > 200_000, "estimate \(estimator.estimate)")
        // The first REMB once the incoming rate is known, the cut right after it, not a second later.
        let cut = rembs.first { $0.bitrate < 500_000 }
        #expect(rembs.first.map { $0.at < 300_000 } == true, "\(rembs)")
        #expect(cut.map { $0.at < 1_000_000 } == true, "\(rembs)")
    }

    @Test func aSenderUnderTheLinkMayGrowAndHearsOnceASecond() {
        var estimator = ReceiveSideEstimator(start: 300_000)
        var link = Link(capacity: 5_000_000)
        // 400 kbit/s through 5 Mbit/s: no queue; the estimate grows, bounded by 1.5 times what arrives.
        let rembs = run(&estimator, &link, frameBytes: 1666, seconds: 10, from: 0).map(\.bitrate)
        #expect(estimator.estimate > 400_000 && estimator.estimate < 700_000, "\(rembs)")
        #expect((9...11).contains(rembs.count), "\(rembs.count) REMBs in 10 s")
        #expect(rembs == rembs.sorted())
    }

    /// A full queue that drops shows no growing delay: the loss itself brings the estimate down.
    @Test func heavyLossBringsTheEstimateToWhatArrives() {
        var estimator = ReceiveSideEstimator(start: 1_000_000)
        var link = Link(capacity: 5_000_000, loseEvery: 4)
        let rembs = run(&estimator, &link, frameBytes: 2500, seconds: 4, from: 0).map(\.bitrate)
        // 600 kbit/s sent, a quarter lost: about 450 arrive, and the estimate is at most 450 * (1 - 0.25/2).
        #expect(estimator.loss > 0.2 && estimator.loss < 0.3)
        #expect(estimator.estimate < 450_000, "\(rembs)")
    }

    @Test func nothingIsDueBeforeAPacketAndOtherStreamsDoNotSteerIt() {
        var estimator = ReceiveSideEstimator()
        #expect(estimator.rembDue(at: 0) == nil)
        estimator.received(ssrc: 1, sequence: 0, timestamp: 0, clockRate: 90_000, size: 1000, at: 0)
        #expect(estimator.rembDue(at: 0) == nil)  // no incoming rate yet
        estimator.received(ssrc: 2, sequence: 9, timestamp: 999_999, clockRate: 90_000, size: 1000, at: 100_000)
        #expect(estimator.mediaSsrc == 1)
        #expect(estimator.rembDue(at: 100_000) == 300_000)
    }
}
