import RtcCodecs
import Testing

@testable import RtcMedia

/// The encoder behind file and live video sources, with libvpx.
@Suite struct PictureEncoderTests {
    /// A 160x120 grey picture (I420).
    private let picture = VideoFrame(width: 160, height: 120, data: [UInt8](repeating: 128, count: 160 * 120 * 3 / 2))

    /// At the smallest size, a target far below it leaves pictures out: a
    /// second of 30 pictures becomes 10 frames once the rate is a third, and
    /// every frame that goes is a real one (the first a keyframe).
    @Test func aVeryLowTargetAtTheSmallestSizeLeavesPicturesOut() throws {
        let encoder = PictureEncoder(framesPerSecond: 30, bitrate: nil)
        try encoder.setTarget(4_000)
        let first = try encoder.encode(picture, time: 0)
        #expect(first?.isKeyframe == true)
        try encoder.setTarget(4_000)  // 0.007 bit per pixel at 30 fps: a half
        try encoder.setTarget(4_000)  // still under 0.02 at 15: a third
        var sent = 0
        for frame in 1...30 where try encoder.encode(picture, time: Double(frame) / 30) != nil { sent += 1 }
        #expect((8...10).contains(sent), "\(sent) of 30 pictures encoded")  // libvpx may drop one itself
    }

    /// Without a target (no feedback from the peer), every picture is encoded.
    @Test func withoutATargetEveryPictureIsEncoded() throws {
        let encoder = PictureEncoder(framesPerSecond: 30, bitrate: nil)
        var sent = 0
        for frame in 0..<30 where try encoder.encode(picture, time: Double(frame) / 30) != nil { sent += 1 }
        #expect(sent == 30)
    }
}
