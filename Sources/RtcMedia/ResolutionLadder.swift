/// The picture size a video sender encodes at when the link cannot carry its
/// source's size (libwebrtc's quality scaler, in the same spirit). Pure: the
/// encoder's quantizer, the target rate and the time come in, a size comes out.
///
/// Rungs are 3/4 of each other in each dimension (640x480, 480x360, 320x240,
/// 240x180, 160x120), as Chromium steps. The quantizer says whether a size
/// is too large for the rate better than any bits-per-pixel rule, since a
/// noisy picture needs many times the bits of a still one: averaged over at
/// least a second and 10 frames, above 95 (of libvpx's 0-127) a rung down,
/// below 29 a rung up, and so does a target above twice what the size needs
/// (`PictureEncoder` says) while the quantizer is below 62, or while the
/// next size would get as many bits per pixel as the encoder's cap leaves
/// this one. Going up
/// waits 5 s after a change, and twice as long each time a rung up had to be
/// given back within 10 s, so a link at the edge between two sizes does not
/// flip between them (each change costs a keyframe). A rung up is given back
/// once: the downs after the first do not lengthen the wait again. Nor does a
/// down while the target is under half what it was at the rung up: the link
/// fell, the size was not at its edge, and the wait starts again from 5 s
/// (a 2 Mbit/s link down to 300 kbit/s for 10 s took four rungs down, each
/// doubled the wait, and the picture stayed at 160x120 for a minute after the
/// link came back). A target below a tenth of what the size takes at 0.1 bit
/// per pixel goes down at once, without waiting for the quantizer: the
/// estimate fell, and every frame at the old size would be late. One under
/// half what the size needs to start at (see below), unless the quantizer
/// says the picture is easy, goes in one change straight to the size it could
/// start at: a link that fell from 1.5 Mbit/s to 300 kbit/s took three rungs
/// a second apart, each a keyframe at a rate that could not carry its size,
/// and 1-2 s without a picture. Before the first frame, the first target
/// picks the largest rung it can start at (about 1.3 bit/s per pixel: 640x360 from
/// 300 kbit/s, 640x480 from 400, near libwebrtc's start table), so a call
/// does not open with a keyframe far too large for its link. Until the size
/// first moves, a higher target (the start probes') takes it a second after
/// the start straight to the size that target could start at.
///
/// Below the smallest size the frame rate goes instead, when the target is so
/// low that each frame would carry next to nothing (under 0.02 bit per pixel):
/// a half, then a third of the source's rate. It comes back, after the same
/// wait as a rung up, when the target gives the higher rate 0.05 bit per
/// pixel, and before the size grows. The quantizer alone never lowers the
/// frame rate: a noisy picture at the smallest size stays at the full rate,
/// coarse, as Chromium's does.
struct ResolutionLadder: Sendable {
    /// libwebrtc's VP8 thresholds on the internal quantizer (0-127).
    static let highQuantizer = 95
    static let lowQuantizer = 29
    static let window = 1.0
    static let windowFrames = 10
    static let firstUpWait = 5.0
    /// The wait before the start size moves up (see `target`).
    static let startUpWait = 1.0
    static let longestUpWait = 60.0
    /// Each rung as a fraction of the source's width and height.
    static let rungs: [(numerator: Int, denominator: Int)] = [(1, 1), (3, 4), (1, 2), (3, 8), (1, 4)]
    /// No rung below this width or height (a picture too small to be worth sending).
    static let smallestWidth = 128
    static let smallestHeight = 96

    let sourceWidth: Int
    let sourceHeight: Int
    let framesPerSecond: Int
    /// The rung in use: 0 is the source's size.
    private(set) var rung = 0
    /// The frame rates below the smallest size: the source's divided by these.
    static let frameRateDivisors = [1, 2, 3]
    /// Which of `frameRateDivisors` is in use (above 0 only at the lowest rung).
    private(set) var frameRateStep = 0
    /// Every how many source frames one is encoded.
    var frameRateDivisor: Int { Self.frameRateDivisors[frameRateStep] }
    private var quantizerSum = 0
    /// The quantizer averaged over the last whole window, if one ended.
    private var lastAverage: Int?
    /// A target above the size's cap climbs only while the quantizer stays
    /// below this (the middle of the two thresholds): a picture the encoder
    /// already finds hard at this size would be harder at the next, and its
    /// first keyframe there overflowed a 2 Mbit/s link's queue (26% lost in
    /// that second, 640x480 noise at 1.5 Mbit/s).
    static let climbQuantizer = 62
    private var quantizerCount = 0
    private var windowStart: Double?
    private var lastChange: Double?
    private var lastUp: Double?
    /// The target when the size last went up, and the latest one (nil before one came).
    private var targetAtLastUp: Int?
    private var lastTarget: Int?
    private var upWait = Self.firstUpWait
    /// Whether a frame was encoded or a target came (the start rung is chosen once).
    private var started = false
    /// Whether the size moved since the start (until then, a higher target
    /// may take the start size straight to the one it could start at).
    private var movedSinceStart = false
    static let startBitsPerPixel = 1.3

    init(width: Int, height: Int, framesPerSecond: Int) {
        sourceWidth = width
        sourceHeight = height
        self.framesPerSecond = max(framesPerSecond, 1)
    }

    /// The size to encode at now (even, as VP8 wants it).
    var size: (width: Int, height: Int) { Self.size(rung: rung, width: sourceWidth, height: sourceHeight) }

    static func size(rung: Int, width: Int, height: Int) -> (width: Int, height: Int) {
        let (numerator, denominator) = rungs[rung]
        return (max(width * numerator / denominator & ~1, 2), max(height * numerator / denominator & ~1, 2))
    }

    /// The lowest rung this source may use.
    private var lowestRung: Int {
        var lowest = 0
        while lowest + 1 < Self.rungs.count {
            let next = Self.size(rung: lowest + 1, width: sourceWidth, height: sourceHeight)
            guard next.width >= Self.smallestWidth, next.height >= Self.smallestHeight else { break }
            lowest += 1
        }
        return lowest
    }

    /// One frame encoded with this quantizer at `time` (seconds, monotonic);
    /// true when the size or the frame rate changes from the next picture on.
    mutating func encoded(quantizer: Int, at time: Double) -> Bool {
        started = true
        let start = windowStart ?? time
        windowStart = start
        quantizerSum += quantizer
        quantizerCount += 1
        guard time - start >= Self.window, quantizerCount >= Self.windowFrames else { return false }
        let average = quantizerSum / quantizerCount
        lastAverage = average
        (quantizerSum, quantizerCount, windowStart) = (0, 0, nil)
        if average > Self.highQuantizer { return down(at: time) }
        return average < Self.lowQuantizer ? up(at: time) : false
    }

    /// Congestion control's share for the track; true when the size or the frame rate changes.
    /// `cap` is what the size is worth: a share above it is a rung up (after
    /// the same wait as the quantizer's, and while the quantizer is below
    /// `climbQuantizer`), since a small size spends bits on detail a larger
    /// one would show, and a moderately noisy picture would stay small for good.
    /// `encoderCap`: the most the encoder takes at a size (width, height), if it has a cap.
    mutating func target(
        _ bitsPerSecond: Int, at time: Double, cap: Int = .max, encoderCap: ((Int, Int) -> Int)? = nil
    ) -> Bool {
        lastTarget = bitsPerSecond
        if !started {
            started = true
            rung = startRung(for: bitsPerSecond)
            if rung > 0 { lastChange = time }
            return rung > 0
        }
        let fitting = startRung(for: bitsPerSecond)
        // The start size came from the first target, libwebrtc's 300 kbit/s
        // guess before any feedback. The start probes tell within a second
        // what the link carries, and the size it could start at comes in
        // one change: a rung every five seconds held a 2 Mbit/s link at
        // 600 kbit/s of 320x240 for the first ten.
        if !movedSinceStart, fitting < rung, (lastAverage ?? 0) < Self.climbQuantizer,
            up(at: time, to: fitting, after: Self.startUpWait)
        {
            return true
        }
        if fitting > rung + 1, Double(bitsPerSecond) < startNeed(rung: rung) / 2,
            (lastAverage ?? Self.highQuantizer) >= Self.lowQuantizer
        {
            return down(at: time, to: fitting)
        }
        let (width, height) = size
        let pixelsPerSecond = Double(width * height * framesPerSecond)
        if Double(bitsPerSecond) < pixelsPerSecond * 0.1 / 10, down(at: time) { return true }
        if rung == lowestRung, let changed = frameRate(for: Double(bitsPerSecond) / pixelsPerSecond, at: time) {
            return changed
        }
        if bitsPerSecond > cap,
            (lastAverage ?? 0) < Self.climbQuantizer || nextRungGetsAsMuch(bitsPerSecond, encoderCap: encoderCap)
        {
            return up(at: time)
        }
        return false
    }

    /// What a size needs to start at, bit/s (`startBitsPerPixel`).
    private func startNeed(rung: Int) -> Double {
        let (width, height) = Self.size(rung: rung, width: sourceWidth, height: sourceHeight)
        return Double(width * height) * Self.startBitsPerPixel
    }

    /// The largest rung `bitsPerSecond` can start at.
    private func startRung(for bitsPerSecond: Int) -> Int {
        (0...lowestRung).first { startNeed(rung: $0) <= Double(bitsPerSecond) } ?? lowestRung
    }

    /// Whether the next size up, at the target or its encoder's cap, gets at
    /// least the bits per pixel this size gets at its own cap: then a hard
    /// quantizer here says the cap is too low, not that the picture is too
    /// hard, and the next size is no harder (noise at 320x240 held at 600
    /// kbit/s of a 1.5 Mbit/s target, when 480x360 could take all of it).
    private func nextRungGetsAsMuch(_ bitsPerSecond: Int, encoderCap: ((Int, Int) -> Int)?) -> Bool {
        guard let encoderCap, rung > 0 else { return false }
        let here = size
        let next = Self.size(rung: rung - 1, width: sourceWidth, height: sourceHeight)
        let rateHere = Double(min(bitsPerSecond, encoderCap(here.width, here.height)))
        let rateNext = Double(min(bitsPerSecond, encoderCap(next.width, next.height)))
        return rateNext / Double(next.width * next.height) >= rateHere / Double(here.width * here.height)
    }

    /// At the smallest size: the frame rate for `bitsPerPixel` (at the
    /// source's rate); nil when it is the source's and stays so.
    private mutating func frameRate(for bitsPerPixel: Double, at time: Double) -> Bool? {
        let divisors = Self.frameRateDivisors
        if frameRateStep + 1 < divisors.count, bitsPerPixel * Double(frameRateDivisor) < 0.02 {
            frameRateStep += 1
            lastChange = time
            return true
        }
        guard frameRateStep > 0 else { return nil }
        guard bitsPerPixel * Double(divisors[frameRateStep - 1]) > 0.05,
            time - (lastChange ?? -.infinity) >= upWait
        else { return false }
        frameRateStep -= 1
        lastChange = time
        return true
    }

    /// A larger size (never while the frame rate is down: that comes back first).
    /// `to`: a rung above the next; `after`: a wait other than `upWait`.
    private mutating func up(at time: Double, to higher: Int? = nil, after wait: Double? = nil) -> Bool {
        guard rung > 0, frameRateStep == 0, time - (lastChange ?? -.infinity) >= wait ?? upWait else { return false }
        rung = max(min(higher ?? rung - 1, rung - 1), 0)
        movedSinceStart = true
        lastChange = time
        lastUp = time
        targetAtLastUp = lastTarget
        (quantizerSum, quantizerCount, windowStart, lastAverage) = (0, 0, nil, nil)
        return true
    }

    /// A smaller size: the next, or `to` (a rung below it). The first down
    /// within 10 s of a rung up doubles the wait before the next climb, unless
    /// the link fell (see the type's comment).
    private mutating func down(at time: Double, to lower: Int? = nil) -> Bool {
        guard rung < lowestRung else { return false }
        if let atUp = targetAtLastUp, let now = lastTarget, now < atUp / 2 {
            upWait = Self.firstUpWait
        } else if let lastUp, time - lastUp < 10 {
            upWait = min(upWait * 2, Self.longestUpWait)
        }
        lastUp = nil
        movedSinceStart = true
        rung = min(max(lower ?? rung + 1, rung + 1), lowestRung)
        lastChange = time
        (quantizerSum, quantizerCount, windowStart, lastAverage) = (0, 0, nil, nil)
        return true
    }
}
