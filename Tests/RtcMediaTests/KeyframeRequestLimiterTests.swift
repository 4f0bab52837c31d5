import Testing

@testable import RtcMedia

/// A flood of keyframe requests makes at most one keyframe per 0.3 s, and no
/// request is lost.
@Suite struct KeyframeRequestLimiterTests {
    @Test func aRequestIsHonouredAtOnceThenAtMostOncePerInterval() {
        var limiter = KeyframeRequestLimiter()
        var granted: [Bool] = []
        granted.append(limiter.take(now: 0))  // nothing asked
        limiter.request()
        granted.append(limiter.take(now: 1.0))
        granted.append(limiter.take(now: 1.033))  // granted already
        limiter.request()
        granted.append(limiter.take(now: 1.1))  // too soon: kept for later
        granted.append(limiter.take(now: 1.299))
        granted.append(limiter.take(now: 1.3))
        granted.append(limiter.take(now: 5))
        #expect(granted == [false, true, false, false, false, true, false])
    }

    /// A receiver asking with every frame for 3 s at 30 fps gets 10 keyframes, not 90.
    @Test func aFloodIsThrottled() {
        var limiter = KeyframeRequestLimiter()
        var keyframes = 0
        for frame in 0..<90 {
            limiter.request()
            if limiter.take(now: Double(frame) / 30) { keyframes += 1 }
        }
        #expect(keyframes == 10)
    }
}
