import RtcCodecs
import Testing

@testable import RtcMedia

/// The encoder behind file and live video sources, with libvpx.
@Suite struct PictureEncoderTests {
    /// A 160x120 grey picture (I420).
    private let picture = VideoFrame(width: 160, height: 120, data: [UInt8](repeating: 128, count: 160 * 120 * 3 / 2))

    /// At the smallest size, a target far below it leaves pictures out: a
    /// second of 30 pictures becomes 10 frames once the rate is a third, and
    /// every frame that goes is a real one (the first a keyframe). libvpx
    /// skips a few more itself while the keyframe's bits drain from its
    /// 250 ms rate buffer: at 4 kbit/s the buffer is a thousand bits.
    @Test func aVeryLowTargetAtTheSmallestSizeLeavesPicturesOut() throws {
        let now = Clock()
        let encoder = PictureEncoder(framesPerSecond: 30, bitrate: nil, clock: { now.seconds })
        try encoder.setTarget(4_000)
        let first = try encoder.encode(picture, time: 0)
        #expect(first?.isKeyframe == true)
        try encoder.setTarget(4_000)  // 0.007 bit per pixel at 30 fps: a half
        try encoder.setTarget(4_000)  // still under 0.02 at 15: a third
        var sent = 0
        for frame in 1...30 {
            now.seconds = Double(frame) / 30
            if try encoder.encode(picture, time: now.seconds) != nil { sent += 1 }
        }
        #expect((4...10).contains(sent), "\(sent) of 30 pictures encoded")
    }

    /// Without a target (no feedback from the peer), every picture is encoded.
    @Test func withoutATargetEveryPictureIsEncoded() throws {
        let encoder = PictureEncoder(framesPerSecond: 30, bitrate: nil)
        var sent = 0
        for frame in 0..<30 where try encoder.encode(picture, time: Double(frame) / 30) != nil { sent += 1 }
        #expect(sent == 30)
    }

    /// A target that stays put far above a small size's need climbs once the
    /// ladder's wait is over, without another target coming: the ladder is
    /// asked at every picture, not only when the target moves (a call sat at
    /// 320x240 for 13 s of a 1.8 Mbit/s estimate). The picture is noise of a
    /// middling amplitude, so the quantizer alone neither climbs nor falls.
    @Test func aSteadyHighTargetClimbsWithoutAnotherTarget() throws {
        let now = Clock()
        let encoder = PictureEncoder(framesPerSecond: 30, bitrate: nil, clock: { now.seconds })
        try encoder.setTarget(300_000)  // starts at 480x360
        // Three noisy pictures in turn.
        let pictures = noisyPictures(3, width: 640, height: 480, lowest: 100, levels: 24, seed: 1)
        var shown = 0
        func noisy() -> VideoFrame {
            shown += 1
            return pictures[shown % 3]
        }
        _ = try encoder.encode(noisy(), time: 0)
        #expect(encoder.encodedSize?.width == 480)
        now.seconds = 0.5
        try encoder.setTarget(1_800_000)  // within the second after the start: no climb yet
        _ = try encoder.encode(noisy(), time: 0.5)
        #expect(encoder.encodedSize?.width == 480)
        for frame in 0..<8 {
            now.seconds = 1.1 + Double(frame) / 30
            _ = try encoder.encode(noisy(), time: now.seconds)
        }
        #expect(encoder.encodedSize?.width == 640)
    }

    /// After congestion control halves the target, the encoder follows within
    /// half a second and stays there: no half second after the cut carries a
    /// quarter more than the new target. With libwebrtc's rate buffer of a
    /// second, libvpx spent what it had saved a second after the cut (400
    /// kbit/s for half a second on a 250 kbit/s target, on this picture).
    @Test func theOutputFollowsACutTarget() throws {
        let now = Clock()
        let encoder = PictureEncoder(framesPerSecond: 30, bitrate: nil, clock: { now.seconds })
        let pictures = noisyPictures(4, width: 320, height: 240, lowest: 96, levels: 32, seed: 7)
        try encoder.setTarget(500_000)
        var halfSeconds = [Int](repeating: 0, count: 16)
        for frame in 0..<240 {
            now.seconds = Double(frame) / 30
            if frame == 120 { try encoder.setTarget(250_000) }
            let sample = try encoder.encode(pictures[frame % 4], time: now.seconds)
            halfSeconds[frame / 15] += sample?.data.count ?? 0
        }
        #expect(encoder.encodedSize?.width == 320)
        let rates = halfSeconds.map { $0 * 8 * 2 }
        let afterCut = rates[9...]  // from half a second after it
        #expect(afterCut.allSatisfy { $0 < 312_500 }, "bit/s each half second: \(rates)")
        #expect(rates[..<8].reduce(0, +) / 8 > 400_000, "bit/s each half second before the cut: \(rates)")
    }
}

/// `count` grey pictures whose luma is noise from `lowest` over `levels`
/// values, the same for the same seed (a linear congruential generator: a
/// cheap one, since debug builds are slow).
private func noisyPictures(
    _ count: Int, width: Int, height: Int, lowest: UInt32, levels: UInt32, seed: UInt32
) -> [VideoFrame] {
    var state = seed
    return (0..<count).map { _ in
        let luma = (0..<width * height).map { _ -> UInt8 in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(lowest + (state >> 24) % levels)
        }
        return VideoFrame(width: width, height: height, data: luma + [UInt8](repeating: 128, count: width * height / 2))
    }
}

/// A clock a test sets.
private final class Clock: @unchecked Sendable {
    var seconds = 0.0
}
