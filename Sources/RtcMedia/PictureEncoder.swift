import AsyncExtras
import RtcCodecs
import RtcContainers

/// Pictures to VP8 for sources that learn the picture size only as pictures
/// come (a container's decoder, an application): an encoder per size, at
/// about 0.06 bit per pixel per frame (200 kbit/s to 2.5 Mbit/s, about where
/// browsers start) unless a bitrate is given, and a keyframe when one was
/// asked for. Once congestion control gives a target, the pictures are
/// shrunk when the link cannot carry their size (`ResolutionLadder`) and
/// grown back when it can; at the smallest size and a target far below it,
/// pictures are left out (15, then 10 of 30 a second). The ladder looks at
/// the target at every picture, not only when it moves: a target that stays
/// put far above a small size's need still climbs once the ladder's wait is
/// over (it sat at 320x240 for 13 s of a 1.8 Mbit/s estimate, sending 440
/// kbit/s, because the estimate did not move after the wait began). Used by
/// its source's one sender thread.
final class PictureEncoder {
    private let framesPerSecond: Int
    private let bitrate: Int?
    /// Congestion control's target, which overrides the size-based rate once set.
    private var target: Int?
    private var encoder: Vp8VideoEncoder?
    private(set) var framesEncoded = 0
    /// What a picture libvpx skipped to hold the rate counts as in the
    /// ladder's quantizer average: the top of the scale, as libwebrtc's
    /// quality scaler counts an encoder's dropped frame.
    static let skippedQuantizer = 127
    /// A keyframe's most, in average frames, once congestion control steers
    /// the encoder (libwebrtc allows 9): a keyframe fills the bottleneck's
    /// queue ahead of the frames behind it, and each rung up is one. A 2
    /// Mbit/s link that fell to 300 kbit/s for 10 s and came back, 5 calls
    /// each: at 9 the picture froze 3-8 times in 30 s, and the climb to
    /// 640x480 lost 19% in its second and was given back; at 3, 1-3 times;
    /// at 2, 1-2 times, and the climb held (1,073 kbit/s through on
    /// average, against 904 at 3). The keyframe is coarser, and the frames
    /// after it refine it.
    static let largestKeyframeOnALink = 2.0
    /// libvpx's rate buffer once congestion control steers the encoder: 100,
    /// 150 and 250 ms (libwebrtc's is 500, 600 and 1,000). With a second of
    /// buffer the encoder follows a new target about a second late, and
    /// spends what it saved in the second after a cut, into the bottleneck's
    /// queue. At a steady 400 kbit/s in the lab (calls taken in turns, one
    /// sitting), the p95 queueing delay was 78 ms at 250 ms of buffer, 101 at
    /// 625 and 107 at libwebrtc's (9 calls each); 125 ms gave 78 against 83
    /// (6 each), no more worth having.
    static let rateBufferOnALink = Vp8VideoEncoder.RateBuffer(initial: 100, optimal: 150, size: 250)
    /// The next picture is made a keyframe (a peer's request, a rewind).
    var keyframeWanted = false
    private var ladder: ResolutionLadder?
    private let scaler = PictureScaler()
    /// The encoder's overshoot against the rate it was given (a new one per encoder).
    private var overshoot = EncoderOvershootDetector()
    /// The rate the encoder was last given, after the overshoot's adjustment.
    private var appliedRate: Int?
    /// The frame rate the overshoot was last told.
    private var appliedFrameRate = 0.0
    /// Seconds on a monotonic clock: the ladder's time (injected by tests).
    private let clock: @Sendable () -> Double
    /// The media time of the last picture encoded (the frame rate's clock).
    private var lastEncodedTime: Double?
    /// The size the last picture was encoded at.
    var encodedSize: (width: Int, height: Int)? { encoder.map { ($0.settings.width, $0.settings.height) } }

    /// `clock`: seconds on a monotonic clock (by default since the encoder was made).
    init(framesPerSecond: Int, bitrate: Int?, clock: (@Sendable () -> Double)? = nil) {
        self.framesPerSecond = max(framesPerSecond, 1)
        self.bitrate = bitrate
        let started = ContinuousClock.now
        self.clock = clock ?? { (ContinuousClock.now - started).inSeconds }
    }

    /// Aims the encoder (and any made for a new size) at `bitsPerSecond`, but
    /// never above the rate asked for, or the most the size can use
    /// (`encoderCap`).
    func setTarget(_ bitsPerSecond: Int) throws {
        target = bitsPerSecond
        reconsiderSize()
        try applyRate(force: true)
    }

    /// The target, divided by the encoder's overshoot, goes to the encoder
    /// when it moved by 2% or more (or `force`); the overshoot is looked at
    /// every picture, since it moves while the target stays put.
    private func applyRate(force: Bool) throws {
        guard let encoder, let capped = cappedTarget(width: encoder.settings.width, height: encoder.settings.height)
        else { return }
        let now = seconds
        let factor = overshoot.factor(at: now)
        let rate = Int(Double(capped) / factor)
        let frameRate = encodedFrameRate
        if !force, let appliedRate, abs(Double(rate - appliedRate)) < 0.02 * Double(appliedRate),
            frameRate == appliedFrameRate
        {
            return
        }
        try encoder.setBitrate(rate)
        appliedRate = rate
        appliedFrameRate = frameRate
        overshoot.setTarget(rate, framesPerSecond: frameRate, at: now)
    }

    /// Pictures a second the encoder makes: the source's, divided by the ladder's step.
    private var encodedFrameRate: Double {
        Double(framesPerSecond) / Double(max(ladder?.frameRateDivisor ?? 1, 1))
    }

    private func sizeRate(width: Int, height: Int) -> Int {
        let pixelsPerSecond = Double(width * height * framesPerSecond)
        return min(max(Int(pixelsPerSecond * 0.06), 200_000), 2_500_000)
    }

    /// Above this target the ladder climbs a rung: twice the size's need
    /// (or the rate asked for), since a larger picture spends the bits better.
    private func climbAbove(width: Int, height: Int) -> Int {
        bitrate ?? 2 * sizeRate(width: width, height: height)
    }

    /// The most the encoder takes at this size: the rate asked for, or the
    /// larger of twice the size's need and libwebrtc's default maximum for the
    /// size (`webrtc_video_engine.cc`, GetMaxDefaultVideoBitrateKbps: 600 kbit/s
    /// to 320x240, 1.7 Mbit/s to 640x480, 2 Mbit/s to 960x540, 2.5 above). A
    /// noisy picture turns every bit into quality, so a small size waiting to
    /// climb still uses the link.
    private func encoderCap(width: Int, height: Int) -> Int {
        if let bitrate { return bitrate }
        let pixels = width * height
        let browserMaximum =
            pixels <= 320 * 240
            ? 600_000 : pixels <= 640 * 480 ? 1_700_000 : pixels <= 960 * 540 ? 2_000_000 : 2_500_000
        return max(2 * sizeRate(width: width, height: height), browserMaximum)
    }

    private func cappedTarget(width: Int, height: Int) -> Int? {
        target.map { min($0, encoderCap(width: width, height: height)) }
    }

    /// The ladder weighs the target at the size in use (at every picture and every new target).
    private func reconsiderSize() {
        guard let target, let size = ladder?.size else { return }
        _ = ladder?.target(
            target, at: seconds, cap: climbAbove(width: size.width, height: size.height),
            encoderCap: { [self] width, height in encoderCap(width: width, height: height) })
    }

    /// The picture as one VP8 frame at `time`; nil when the rate control
    /// skipped it, or the ladder's frame rate leaves it out.
    func encode(_ source: VideoFrame, time: Double) throws -> EncodedSample? {
        reconsiderSize()
        let picture = scaled(source)
        if let divisor = ladder?.frameRateDivisor, divisor > 1, let last = lastEncodedTime,
            time - last < (Double(divisor) - 0.5) / Double(framesPerSecond), time >= last
        {
            return nil
        }
        lastEncodedTime = time
        let encoder = try encoder(for: picture)
        if target != nil { try applyRate(force: false) }
        let forced = keyframeWanted
        keyframeWanted = false
        let encoded = try picture.data.withUnsafeBytes { try encoder.encode(i420: $0, keyframe: forced) }
        framesEncoded += 1
        // A picture libvpx skipped is not a frame the pacer sees.
        if target != nil, !encoded.isEmpty {
            overshoot.encoded(bytes: encoded.reduce(0) { $0 + $1.data.count }, at: seconds)
        }
        if target != nil, let quantizer = encoded.isEmpty ? Self.skippedQuantizer : encoder.lastQuantizer {
            _ = ladder?.encoded(quantizer: quantizer, at: seconds)
        }
        guard let head = encoded.first else { return nil }
        return EncodedSample(data: encoded.flatMap(\.data), time: time, isKeyframe: head.isKeyframe)
    }

    /// The ladder's clock, seconds.
    private var seconds: Double { clock() }

    /// The picture at the ladder's size: the source's until congestion control
    /// gives a target (a call without feedback keeps its size).
    private func scaled(_ picture: VideoFrame) -> VideoFrame {
        if ladder?.sourceWidth != picture.width || ladder?.sourceHeight != picture.height {
            ladder = ResolutionLadder(width: picture.width, height: picture.height, framesPerSecond: framesPerSecond)
            // A target that came before the first picture picks the size to start at.
            if let target { _ = ladder?.target(target, at: seconds) }
        }
        guard let size = ladder?.size, size.width != picture.width || size.height != picture.height else {
            return picture
        }
        return scaler.scale(picture, width: size.width, height: size.height) ?? picture
    }

    /// The encoder for this picture size (made at the first picture; a new size makes a new one).
    private func encoder(for picture: VideoFrame) throws -> Vp8VideoEncoder {
        if let encoder, encoder.settings.width == picture.width, encoder.settings.height == picture.height {
            return encoder
        }
        let rate =
            cappedTarget(width: picture.width, height: picture.height) ?? bitrate
            ?? sizeRate(width: picture.width, height: picture.height)
        let made = try Vp8VideoEncoder(
            .init(
                width: picture.width, height: picture.height, framesPerSecond: framesPerSecond, bitrate: rate,
                keyframeInterval: framesPerSecond * 10, dropsFramesToHoldRate: target != nil,
                largestKeyframe: target != nil ? Self.largestKeyframeOnALink : nil,
                rateBuffer: target != nil ? Self.rateBufferOnALink : .libwebrtc))
        encoder = made
        overshoot = EncoderOvershootDetector()
        if target != nil { try applyRate(force: true) }
        return made
    }
}
