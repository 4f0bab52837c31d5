import CFFmpeg
import RtcCodecs

/// Resizes I420 pictures with libswscale (area averaging, which keeps detail
/// when shrinking and does not alias). A sender shrinks its pictures when the
/// link cannot carry their size; a recorder brings a stream whose size
/// changed back to its file's size. One owner at a time; the context is kept
/// while the sizes stay the same.
public final class PictureScaler: @unchecked Sendable {
    private var context: OpaquePointer?
    private var sizes: (Int, Int, Int, Int) = (0, 0, 0, 0)

    /// A scaler; its context is made at the first picture.
    public init() {}

    deinit { sws_freeContext(context) }

    /// The picture at `width` x `height` (even sizes, as VP8 wants them); the
    /// same picture when it already has that size; nil when libswscale refuses.
    public func scale(_ picture: VideoFrame, width: Int, height: Int) -> VideoFrame? {
        if picture.width == width, picture.height == height { return picture }
        guard width > 0, height > 0, picture.width > 0, picture.height > 0,
            picture.data.count >= VideoFrame.byteCount(width: picture.width, height: picture.height)
        else { return nil }
        if context == nil || sizes != (picture.width, picture.height, width, height) {
            sws_freeContext(context)
            context = sws_getContext(
                Int32(picture.width), Int32(picture.height), AV_PIX_FMT_YUV420P, Int32(width), Int32(height),
                AV_PIX_FMT_YUV420P, SWS_AREA, nil, nil, nil)
            sizes = (picture.width, picture.height, width, height)
        }
        guard let context else { return nil }
        var output = [UInt8](repeating: 0, count: VideoFrame.byteCount(width: width, height: height))
        let produced = picture.data.withUnsafeBufferPointer { source -> Int32 in
            output.withUnsafeMutableBufferPointer { target -> Int32 in
                guard let from = source.baseAddress, let to = target.baseAddress else { return -1 }
                let inPlanes = Self.planes(
                    UnsafeMutablePointer(mutating: from), width: picture.width, height: picture.height)
                let outPlanes = Self.planes(to, width: width, height: height)
                var sourcePlanes: [UnsafePointer<UInt8>?] = inPlanes.pointers.map { UnsafePointer($0) } + [nil]
                var sourceStrides = inPlanes.strides + [0]
                var targetPlanes: [UnsafeMutablePointer<UInt8>?] = outPlanes.pointers + [nil]
                var targetStrides = outPlanes.strides + [0]
                return sws_scale(
                    context, &sourcePlanes, &sourceStrides, 0, Int32(picture.height), &targetPlanes, &targetStrides)
            }
        }
        return produced > 0 ? VideoFrame(width: width, height: height, data: output) : nil
    }

    /// The Y, U and V planes of a packed I420 picture and their strides.
    private static func planes(_ base: UnsafeMutablePointer<UInt8>, width: Int, height: Int) -> (
        pointers: [UnsafeMutablePointer<UInt8>?], strides: [Int32]
    ) {
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        return (
            [base, base + width * height, base + width * height + chromaWidth * chromaHeight],
            [Int32(width), Int32(chromaWidth), Int32(chromaWidth)]
        )
    }
}
