import Testing

@testable import RtcMedia

/// The sender's picture size on chosen quantizers, targets and times (s).
@Suite struct ResolutionLadderTests {
    /// A second of frames at 30 fps with this quantizer, from `start`; whether the size changed.
    private func second(_ ladder: inout ResolutionLadder, quantizer: Int, from start: Double) -> Bool {
        var changed = false
        for frame in 0...30 where ladder.encoded(quantizer: quantizer, at: start + Double(frame) / 30) {
            changed = true
        }
        return changed
    }

    @Test func coarseQuantizersStepDownARungASecondToTheSmallestSize() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        var sizes: [String] = []
        for start in 0..<6 {
            _ = second(&ladder, quantizer: 110, from: Double(start) * 1.1)
            sizes.append("\(ladder.size.width)x\(ladder.size.height)")
        }
        #expect(sizes == ["480x360", "320x240", "240x180", "160x120", "160x120", "160x120"])
    }

    @Test func aSmallSourceStopsAboveAHundredAndTwentyEightPixels() {
        var ladder = ResolutionLadder(width: 320, height: 240, framesPerSecond: 15)
        for start in 0..<5 { _ = second(&ladder, quantizer: 120, from: Double(start) * 1.1) }
        #expect(ladder.size.width == 160 && ladder.size.height == 120)
    }

    @Test func middlingQuantizersKeepTheSize() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        var changes = 0
        for start in 0..<20 where second(&ladder, quantizer: 60, from: Double(start) * 1.1) { changes += 1 }
        #expect(changes == 0)
        #expect(ladder.rung == 0)
    }

    @Test func fineQuantizersStepBackUpAfterFiveSeconds() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = second(&ladder, quantizer: 110, from: 0)
        #expect(ladder.rung == 1)
        // The link came back at once: still the smaller size until 5 s after the change.
        let early = [1.1, 2.2].map { second(&ladder, quantizer: 20, from: $0) }
        #expect(early == [false, false])
        var upAt: Double?
        for start in stride(from: 3.3, to: 10, by: 1.1) where second(&ladder, quantizer: 20, from: start) {
            upAt = start
            break
        }
        #expect(ladder.rung == 0)
        #expect(upAt.map { $0 >= 4 && $0 <= 6 } == true, "up at \(String(describing: upAt))")
    }

    /// Seconds of `quantizer` from `time` until the rung is `rung` (or `limit`
    /// passed); the time after the second that got there.
    private func seconds(
        _ ladder: inout ResolutionLadder, quantizer: Int, from time: Double, until rung: Int, limit: Double = 60
    ) -> Double {
        var time = time
        while ladder.rung != rung, time < limit {
            _ = second(&ladder, quantizer: quantizer, from: time)
            time += 1.1
        }
        return time
    }

    @Test func aRungUpGivenBackSoonWaitsTwiceAsLongNextTime() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = second(&ladder, quantizer: 110, from: 0)  // down at ~1 s
        var time = seconds(&ladder, quantizer: 20, from: 1.1, until: 0)
        _ = second(&ladder, quantizer: 110, from: time)  // given back within 10 s
        time += 1.1
        let downAt = time
        time = seconds(&ladder, quantizer: 20, from: time, until: 0, limit: 40)
        #expect(ladder.rung == 0)
        #expect(time - downAt >= 10, "up again after \(time - downAt) s")
    }

    /// A rung up is given back once: three rungs down after it double the
    /// wait once (10 s), not three times (40 s).
    @Test func aRungUpIsGivenBackOnce() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        var time = seconds(&ladder, quantizer: 110, from: 0, until: 1)
        time = seconds(&ladder, quantizer: 20, from: time, until: 0)
        time = seconds(&ladder, quantizer: 110, from: time, until: 3)
        let lastDown = time
        time = seconds(&ladder, quantizer: 20, from: time, until: 2)
        #expect(ladder.rung == 2)
        #expect((10...12).contains(time - lastDown), "up again after \(time - lastDown) s")
    }

    /// Downs while the target is under half what it was at the last rung up
    /// (a link that fell) do not lengthen the wait: the picture climbs again
    /// 5 s after the last of them once the link is back.
    @Test func aLinkThatFellDoesNotLengthenTheWait() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = ladder.target(1_500_000, at: 0)
        var time = seconds(&ladder, quantizer: 110, from: 0, until: 1)
        time = seconds(&ladder, quantizer: 20, from: time, until: 0)
        _ = ladder.target(250_000, at: time)
        time = seconds(&ladder, quantizer: 110, from: time, until: 4)
        let lastDown = time
        _ = ladder.target(1_800_000, at: time)
        time = seconds(&ladder, quantizer: 20, from: time, until: 3)
        #expect(ladder.rung == 3)
        #expect((5...7).contains(time - lastDown), "up again after \(time - lastDown) s")
    }

    @Test func theFirstTargetPicksTheSizeToStartAt() {
        let starts = [1_000_000, 400_000, 300_000, 100_000, 10_000].map { rate in
            var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
            _ = ladder.target(rate, at: 0)
            return "\(ladder.size.width)x\(ladder.size.height)"
        }
        #expect(starts == ["640x480", "640x480", "480x360", "320x240", "160x120"])
        // Once frames went out at a size, a target only moves it by the rules below.
        var running = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = running.encoded(quantizer: 50, at: 0)
        _ = running.target(300_000, at: 0.1)
        #expect(running.rung == 0)
    }

    /// The start size came from the first target, a guess before any
    /// feedback: until the size first moves, a second after the start, a
    /// higher target (the start probes') takes it straight to the size that
    /// target could start at, in one keyframe, not a rung every five seconds.
    @Test func aProbedTargetTakesTheStartSizeUpInOneChange() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = ladder.target(150_000, at: 0)  // starts at 320x240
        #expect(ladder.rung == 2)
        let tooSoon = ladder.target(1_500_000, at: 0.5)
        #expect(!tooSoon, "not before the first keyframe has had a second")
        let jumped = ladder.target(1_500_000, at: 1.2)
        #expect(jumped && ladder.rung == 0)
        // From 240x180 too: one change, not three (once moved, a climb is a
        // rung after the usual wait: the next test).
        var small = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = small.target(80_000, at: 0)
        let fromSmall = small.target(900_000, at: 1, cap: 400_000)
        #expect(fromSmall && small.rung == 0)
        var hard = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = hard.target(80_000, at: 0)
        _ = hard.encoded(quantizer: 70, at: 0.1)
        _ = hard.encoded(quantizer: 70, at: 1.2)  // too few frames for a window: no average yet
        for index in 0..<12 { _ = hard.encoded(quantizer: 70, at: 1.3 + Double(index) * 0.1) }
        let hardJump = hard.target(900_000, at: 2.5)
        #expect(!hardJump && hard.rung == 3, "a picture the encoder finds hard does not jump")
    }

    @Test func aTargetAboveWhatTheSizeTakesStepsUpAfterTheWait() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = ladder.target(80_000, at: 0)  // starts at 240x180
        #expect(ladder.rung == 3)
        _ = ladder.target(150_000, at: 1.5)  // the start jump, to 320x240
        #expect(ladder.rung == 2)
        let early = ladder.target(900_000, at: 4.5, cap: 400_000)
        let later = ladder.target(900_000, at: 6.6, cap: 400_000)
        #expect(!early && later && ladder.rung == 1)
        let within = ladder.target(900_000, at: 7, cap: 400_000)
        #expect(!within)
    }

    /// A target above the cap climbs only while the quantizer is below the
    /// middle (62): a picture the encoder finds hard at one size would be
    /// harder at the next (its first keyframe there overflowed the link).
    @Test func aHardPictureDoesNotClimbOnTheTargetAlone() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = ladder.target(300_000, at: 0)  // starts at 480x360
        #expect(ladder.rung == 1)
        _ = second(&ladder, quantizer: 80, from: 5)
        #expect(!ladder.target(2_000_000, at: 6.1, cap: 600_000) && ladder.rung == 1)
        _ = second(&ladder, quantizer: 50, from: 6.2)
        #expect(ladder.target(2_000_000, at: 7.3, cap: 600_000) && ladder.rung == 0)
    }

    /// A hard picture still climbs when the encoder's cap, not the picture,
    /// holds this size back: the next size gets as many bits per pixel.
    @Test func aHardPictureHeldByTheEncodersCapClimbs() {
        // libwebrtc's maximum per size, as PictureEncoder caps its encoder.
        let encoderCap: (Int, Int) -> Int = { width, height in width * height <= 320 * 240 ? 600_000 : 1_700_000 }
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = ladder.target(150_000, at: 0)  // starts at 320x240
        #expect(ladder.size.width == 320)
        _ = second(&ladder, quantizer: 80, from: 5)
        // 1 Mbit/s over 480x360 is 5.8 bit/s a pixel, under the 7.8 that 600 kbit/s gives 320x240: stay.
        let stays = !ladder.target(1_000_000, at: 6.1, cap: 400_000, encoderCap: encoderCap)
        #expect(stays)
        // 1.44 Mbit/s over 480x360 is 8.3: up, though the quantizer is high.
        let climbs = ladder.target(1_440_000, at: 6.2, cap: 400_000, encoderCap: encoderCap)
        #expect(climbs)
        #expect(ladder.size.width == 480)
    }

    @Test func aTargetFarBelowTheSizeStepsDownAtOnce() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = second(&ladder, quantizer: 20, from: 0)  // an easy picture: the start-size rule below stays out
        let enough = ladder.target(300_000, at: 1.1)
        let tooLittle = ladder.target(60_000, at: 1.2)  // under 0.01 bit per pixel at 640x480@30 (92 kbit/s)
        #expect(!enough && tooLittle)
        #expect(ladder.size.width == 480)
    }

    /// A target under half what the size needs to start at (1.3 bit/s per
    /// pixel) goes straight to the size it could start at, in one change (one
    /// keyframe), unless the picture is easy: a link that fell from 1.5 Mbit/s
    /// to 300 kbit/s left the video 50-90 kbit/s, and three rungs a second
    /// apart stopped the picture for 1-2 s.
    @Test func aTargetThatFellFarGoesStraightToItsSize() {
        var ladder = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = ladder.target(300_000, at: 0)
        #expect(ladder.size.width == 480)  // started at 480x360 (225 kbit/s)
        _ = second(&ladder, quantizer: 80, from: 0)
        var changes = 0
        for step in 0..<30 {  // three seconds of 88 kbit/s, the quantizer middling
            if ladder.target(88_000, at: 1.1 + Double(step) / 10) { changes += 1 }
        }
        #expect(changes == 1)
        #expect(ladder.size.width == 240)  // 240x180 starts at 56 kbit/s, 320x240 at 100
        // An easy picture (quantizer under 29) keeps its size for the quantizer to judge.
        var easy = ResolutionLadder(width: 640, height: 480, framesPerSecond: 30)
        _ = easy.target(1_000_000, at: 0)
        _ = second(&easy, quantizer: 20, from: 0)
        #expect(!easy.target(150_000, at: 1.2) && easy.rung == 0)
    }

    /// At the smallest size the target alone moves the frame rate: under 0.02
    /// bit per pixel a half, then a third, never lower; back when the higher
    /// rate gets 0.05, after the wait, and only then a larger size. A coarse
    /// quantizer at the smallest size leaves the rate alone.
    @Test func atTheSmallestSizeAVeryLowTargetLowersTheFrameRate() {
        var ladder = ResolutionLadder(width: 320, height: 240, framesPerSecond: 30)
        for start in 0..<4 { _ = second(&ladder, quantizer: 120, from: Double(start) * 1.1) }
        #expect(ladder.size.width == 160 && ladder.frameRateDivisor == 1)
        // 160x120 at 30 fps is 576 000 pixels a second: 0.02 bit per pixel is 11.5 kbit/s.
        var steps: [String] = []
        for (time, target) in [
            (5.0, 20_000), (5.1, 10_000), (5.2, 4_000), (5.3, 2_000), (6.0, 40_000), (10.5, 40_000), (16.0, 40_000),
            (22.0, 900_000), (28.0, 900_000),
        ] {
            // Frames at a middling quantizer before the climbs (a coarse one holds the size).
            if target == 900_000 { _ = second(&ladder, quantizer: 50, from: time - 1.1) }
            _ = ladder.target(target, at: time, cap: 400_000)
            steps.append("\(ladder.size.width)/\(ladder.frameRateDivisor)")
        }
        #expect(steps == ["160/1", "160/2", "160/3", "160/3", "160/3", "160/2", "160/1", "240/1", "320/1"])
    }
}
