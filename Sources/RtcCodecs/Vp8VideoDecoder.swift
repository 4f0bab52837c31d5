import CShimVpx
import CVpx

/// VP8 decoder (libvpx). Not thread-safe: one owner decodes at a time.
public final class Vp8VideoDecoder: @unchecked Sendable {
    private var context = vpx_codec_ctx_t()
    /// The last picture's bytes: reused when the caller let go of the previous
    /// picture (copy-on-write keeps one it still holds intact).
    private var buffer: [UInt8] = []

    /// A decoder using up to `threads` threads.
    public init(threads: Int = 1) throws(CodecError) {
        guard cshim_vpx_vp8_decoder_init(&context, UInt32(max(threads, 1))) == VPX_CODEC_OK else {
            throw .library("vpx_codec_dec_init: \(Vp8VideoEncoder.lastError(&context))")
        }
    }

    deinit { vpx_codec_destroy(&context) }

    /// Decodes one compressed frame; nil when it produced no picture.
    public func decode(_ frame: [UInt8]) throws(CodecError) -> VideoFrame? {
        guard !frame.isEmpty else { throw .badInput("empty VP8 frame") }
        let status = frame.withUnsafeBufferPointer {
            vpx_codec_decode(&context, $0.baseAddress, UInt32($0.count), nil, 0)
        }
        guard status == VPX_CODEC_OK else {
            throw .badInput("undecodable VP8 frame: \(Vp8VideoEncoder.lastError(&context))")
        }
        var iterator: vpx_codec_iter_t?
        var picture: VideoFrame?
        while let image = vpx_codec_get_frame(&context, &iterator) { picture = copy(image.pointee) }
        return picture
    }

    /// Packs the image's three planes (which have strides) into one I420 buffer.
    private func copy(_ image: vpx_image_t) -> VideoFrame {
        let width = Int(image.d_w)
        let height = Int(image.d_h)
        let size = VideoFrame.byteCount(width: width, height: height)
        if buffer.count != size { buffer = [UInt8](repeating: 0, count: size) }
        var data = buffer
        buffer = []  // `data` is now the only reference: written in place
        let planes = [
            (image.planes.0, Int(image.stride.0), width, height),
            (image.planes.1, Int(image.stride.1), (width + 1) / 2, (height + 1) / 2),
            (image.planes.2, Int(image.stride.2), (width + 1) / 2, (height + 1) / 2),
        ]
        var offset = 0
        data.withUnsafeMutableBufferPointer { out in
            for (plane, stride, planeWidth, planeHeight) in planes {
                guard let plane, let base = out.baseAddress else { continue }
                for row in 0..<planeHeight {
                    (base + offset + row * planeWidth).update(from: plane + row * stride, count: planeWidth)
                }
                offset += planeWidth * planeHeight
            }
        }
        buffer = data
        return VideoFrame(width: width, height: height, data: data)
    }
}
