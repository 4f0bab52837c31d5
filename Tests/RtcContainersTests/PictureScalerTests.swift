import RtcCodecs
import Testing

@testable import RtcContainers

/// libswscale's resize of I420 pictures.
@Suite struct PictureScalerTests {
    /// A smooth picture: luma a diagonal ramp, chroma flat.
    private func ramp(width: Int, height: Int) -> VideoFrame {
        var data = [UInt8](repeating: 128, count: VideoFrame.byteCount(width: width, height: height))
        for y in 0..<height {
            for x in 0..<width { data[y * width + x] = UInt8(16 + (x + y) * 200 / (width + height)) }
        }
        return VideoFrame(width: width, height: height, data: data)
    }

    @Test func shrinksAndGrowsBackCloseToTheOriginal() throws {
        let scaler = PictureScaler()
        let original = ramp(width: 640, height: 480)
        let small = try #require(scaler.scale(original, width: 320, height: 240))
        #expect(small.width == 320 && small.height == 240)
        #expect(small.data.count == VideoFrame.byteCount(width: 320, height: 240))
        let back = try #require(PictureScaler().scale(small, width: 640, height: 480))
        let psnr = try #require(back.lumaPsnr(against: original))
        #expect(psnr > 35, "PSNR \(psnr) dB")
        // Chroma stays where it was.
        #expect(small.data.dropFirst(320 * 240).allSatisfy { abs(Int($0) - 128) <= 1 })
    }

    @Test func theSameSizeIsTheSamePictureAndBadInputIsRefused() {
        let scaler = PictureScaler()
        let picture = ramp(width: 64, height: 48)
        #expect(scaler.scale(picture, width: 64, height: 48) == picture)
        #expect(scaler.scale(VideoFrame(width: 64, height: 48, data: [1, 2, 3]), width: 32, height: 24) == nil)
        #expect(scaler.scale(picture, width: 0, height: 24) == nil)
    }
}
