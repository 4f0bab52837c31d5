import Testing

@testable import RtcMedia

/// The overshoot a video encoder's target is divided by, on virtual time.
@Suite struct EncoderOvershootDetectorTests {
    /// 300 kbit/s at 30 frames a second: 10,000 bits a frame, 1,250 bytes.
    private let ideal = 1_250

    /// Feeds frames of `bytes` (nil: the encoder skipped the picture) a 30th of a second apart from `start`.
    private func feed(
        _ detector: inout EncoderOvershootDetector, _ sizes: [Int?], from start: Double
    ) -> Double {
        var time = start
        for size in sizes {
            if let size { detector.encoded(bytes: size, at: time) }
            time += 1.0 / 30
        }
        return time
    }

    private func detector() -> EncoderOvershootDetector {
        var made = EncoderOvershootDetector()
        made.setTarget(300_000, framesPerSecond: 30, at: 0)
        return made
    }

    /// An encoder on its target, frame after frame: nothing to take off.
    @Test func framesOnTheTargetAreNotAdjusted() {
        var detector = detector()
        let time = feed(&detector, Array(repeating: ideal, count: 90), from: 0)
        #expect(abs(detector.factor(at: time) - 1) < 0.01)
    }

    /// A new encoder's first 30 frames say nothing yet: however large, the factor is 1.
    @Test func theFirstFramesAreNotTrusted() {
        var detector = detector()
        var time = feed(&detector, Array(repeating: ideal * 2, count: 29), from: 0)
        #expect(detector.factor(at: time) == 1)
        time = feed(&detector, [ideal * 2], from: time)
        #expect(detector.factor(at: time) > 1.9)
    }

    /// An encoder that puts out half as much again as it is given: every frame
    /// after the first finds half a frame still waiting.
    @Test func aSteadyOvershootIsMeasured() {
        var detector = detector()
        let time = feed(&detector, Array(repeating: ideal * 3 / 2, count: 90), from: 0)
        let factor = detector.factor(at: time)
        #expect(abs(factor - 1.5) < 0.02, "\(factor)")
    }

    /// A keyframe five frames large that the encoder pays for by skipping the
    /// next pictures costs nothing; the same keyframe with full frames behind
    /// it does, since those frames wait behind it.
    @Test func aLargeFrameCostsOnlyWhenFramesPileUpBehindIt() {
        var paid = detector()
        var time = feed(&paid, Array(repeating: ideal, count: 40), from: 0)
        time = feed(&paid, [ideal * 5, nil, nil, nil, nil] + Array(repeating: ideal, count: 20), from: time)
        let paidFactor = paid.factor(at: time)
        #expect(paidFactor < 1.01, "\(paidFactor)")

        var unpaid = detector()
        time = feed(&unpaid, Array(repeating: ideal, count: 40), from: 0)
        time = feed(&unpaid, [ideal * 5] + Array(repeating: ideal, count: 24), from: time)
        let unpaidFactor = unpaid.factor(at: time)
        #expect(unpaidFactor > 1.04, "\(unpaidFactor)")
    }

    /// The factor looks 3 s back: an overshoot that ended is forgotten, and
    /// it never takes the target below half.
    @Test func theFactorIsBoundedAndForgets() {
        var detector = detector()
        var time = feed(&detector, Array(repeating: ideal * 4, count: 60), from: 0)
        #expect(detector.factor(at: time) == EncoderOvershootDetector.largestFactor)
        // The encoder is told half the rate and meets it; the backlog drains first.
        detector.setTarget(150_000, framesPerSecond: 30, at: time)
        time = feed(&detector, Array(repeating: nil, count: 200), from: time)
        time = feed(&detector, Array(repeating: ideal / 2, count: 100), from: time)
        #expect(abs(detector.factor(at: time) - 1) < 0.01)
    }
}
