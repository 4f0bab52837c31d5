import Foundation

/// One picture in I420 (planar Y, then U and V at half width and height),
/// rows packed without padding.
public struct VideoFrame: Sendable, Equatable {
    /// Picture width in pixels.
    public var width: Int
    /// Picture height in pixels.
    public var height: Int
    /// The Y, U and V planes, one after another (`byteCount` bytes).
    public var data: [UInt8]

    /// A picture from its I420 bytes.
    public init(width: Int, height: Int, data: [UInt8]) {
        self.width = width
        self.height = height
        self.data = data
    }

    /// The bytes of an I420 picture of this size (chroma rounded up for odd sizes).
    public static func byteCount(width: Int, height: Int) -> Int {
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        return width * height + 2 * chromaWidth * chromaHeight
    }

    /// A mid-grey frame (what a receiver shows before the first picture).
    public static func grey(width: Int, height: Int) -> VideoFrame {
        VideoFrame(
            width: width, height: height, data: [UInt8](repeating: 128, count: byteCount(width: width, height: height)))
    }

    /// Peak signal-to-noise ratio of the luma plane against another frame of
    /// the same size, in dB (infinity when identical): the usual objective
    /// check that a decoded picture matches its source.
    public func lumaPsnr(against other: VideoFrame) -> Double? {
        guard width == other.width, height == other.height else { return nil }
        let count = width * height
        guard data.count >= count, other.data.count >= count else { return nil }
        var sum = 0.0
        for index in 0..<count {
            let difference = Double(Int(data[index]) - Int(other.data[index]))
            sum += difference * difference
        }
        guard sum > 0 else { return .infinity }
        let meanSquare = sum / Double(count)
        return 10 * log10(255 * 255 / meanSquare)
    }
}
