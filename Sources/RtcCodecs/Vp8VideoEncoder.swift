import CShimVpx
import CVpx

/// VP8 encoder (libvpx) set up for real time: no lag, constant bitrate,
/// error resilience, a keyframe at a set interval and on request.
/// Not thread-safe: one owner encodes at a time.
public final class Vp8VideoEncoder: @unchecked Sendable {
    /// How the encoder encodes: picture size, rate, bitrate, keyframes, speed.
    public struct Settings: Sendable, Equatable {
        /// Picture width in pixels (even).
        public var width: Int
        /// Picture height in pixels (even).
        public var height: Int
        /// Pictures per second it is given.
        public var framesPerSecond: Int
        /// Target bits per second (constant bitrate).
        public var bitrate: Int
        /// Frames between keyframes when nobody asks for one.
        public var keyframeInterval: Int
        /// libvpx speed (-16…16 for VP8; higher is faster and coarser). 16 halves
        /// the CPU of 8 for about 2 dB less PSNR at the same bitrate (measured on
        /// 640x480 test patterns): a headless peer spends its CPU elsewhere.
        public var speed: Int
        /// Encoder threads (1: the sender's thread only).
        public var threads: Int
        /// Whether libvpx may skip a picture to hold the bitrate (libwebrtc's
        /// `rc_dropframe_thresh` of 30, for a rate that follows a link): at its
        /// largest quantizer a picture too noisy for the rate otherwise
        /// overshoots it, and a link at capacity drops what overshoots.
        public var dropsFramesToHoldRate: Bool
        /// A keyframe's largest size in average frames
        /// (`VP8E_SET_MAX_INTRA_BITRATE_PCT`); nil: libwebrtc's rule, half the
        /// optimal buffer's worth of frames (9 at 30 fps).
        public var largestKeyframe: Double?
        /// libvpx's rate buffer; libwebrtc's unless told otherwise.
        public var rateBuffer: RateBuffer

        /// 30 fps at 1 Mb/s, a keyframe every 300 frames, speed 16, one thread,
        /// no skipped pictures, keyframes by libwebrtc's rule, unless told otherwise.
        public init(
            width: Int, height: Int, framesPerSecond: Int = 30, bitrate: Int = 1_000_000,
            keyframeInterval: Int = 300, speed: Int = 16, threads: Int = 1, dropsFramesToHoldRate: Bool = false,
            largestKeyframe: Double? = nil, rateBuffer: RateBuffer = .libwebrtc
        ) {
            self.width = width
            self.height = height
            self.framesPerSecond = framesPerSecond
            self.bitrate = bitrate
            self.keyframeInterval = keyframeInterval
            self.speed = speed
            self.threads = threads
            self.dropsFramesToHoldRate = dropsFramesToHoldRate
            self.largestKeyframe = largestKeyframe
            self.rateBuffer = rateBuffer
        }
    }

    /// The buffer libvpx's constant-bitrate control holds the rate over, in
    /// milliseconds at the target rate (`rc_buf_initial_sz`,
    /// `rc_buf_optimal_sz`, `rc_buf_sz`): the larger, the longer the encoder
    /// takes to follow a new target.
    public struct RateBuffer: Sendable, Equatable {
        /// Where the buffer starts.
        public var initial: Int
        /// Where the rate control keeps it.
        public var optimal: Int
        /// Its size.
        public var size: Int

        /// A buffer of these sizes (milliseconds).
        public init(initial: Int, optimal: Int, size: Int) {
            self.initial = initial
            self.optimal = optimal
            self.size = size
        }

        /// libwebrtc's (`LibvpxVp8Encoder`): 500, 600 and 1,000 ms.
        public static let libwebrtc = RateBuffer(initial: 500, optimal: 600, size: 1000)
    }

    /// One encoded picture.
    public struct Encoded: Sendable, Equatable {
        /// The VP8 frame, as RFC 7741 packetizes it.
        public var data: [UInt8]
        /// Whether it decodes without the frames before it.
        public var isKeyframe: Bool
    }

    /// The settings it was made with.
    public let settings: Settings
    private var context = vpx_codec_ctx_t()
    private var config = vpx_codec_enc_cfg_t()
    /// The bitrate it aims at now (the settings' until `setBitrate`).
    public private(set) var bitrate: Int
    private var image = vpx_image_t()
    private var frameIndex: Int64 = 0

    /// A real-time encoder with these settings.
    public init(_ settings: Settings) throws(CodecError) {
        guard settings.width > 0, settings.height > 0, settings.width % 2 == 0, settings.height % 2 == 0 else {
            throw .badSettings("VP8 needs an even width and height, not \(settings.width)x\(settings.height)")
        }
        self.settings = settings
        bitrate = settings.bitrate
        guard cshim_vpx_vp8_encoder_default_config(&config) == VPX_CODEC_OK else {
            throw .library("vpx_codec_enc_config_default failed")
        }
        config.g_w = UInt32(settings.width)
        config.g_h = UInt32(settings.height)
        config.g_timebase = vpx_rational(num: 1, den: Int32(max(settings.framesPerSecond, 1)))
        config.rc_target_bitrate = UInt32(max(settings.bitrate / 1000, 1))
        config.g_lag_in_frames = 0
        config.g_threads = UInt32(max(settings.threads, 1))
        config.rc_end_usage = VPX_CBR
        config.g_error_resilient = vpx_codec_er_flags_t(VPX_ERROR_RESILIENT_DEFAULT)
        config.kf_mode = VPX_KF_AUTO
        config.kf_max_dist = UInt32(max(settings.keyframeInterval, 1))
        config.rc_min_quantizer = 2
        config.rc_max_quantizer = 56
        config.rc_undershoot_pct = 100
        config.rc_overshoot_pct = 15
        config.rc_buf_initial_sz = UInt32(max(settings.rateBuffer.initial, 1))
        config.rc_buf_optimal_sz = UInt32(max(settings.rateBuffer.optimal, 1))
        config.rc_buf_sz = UInt32(max(settings.rateBuffer.size, 1))
        config.rc_dropframe_thresh = settings.dropsFramesToHoldRate ? 30 : 0
        guard cshim_vpx_vp8_encoder_init(&context, &config) == VPX_CODEC_OK else {
            throw .library("vpx_codec_enc_init: \(Self.lastError(&context))")
        }
        _ = cshim_vpx_control_int(&context, Int32(VP8E_SET_CPUUSED.rawValue), Int32(settings.speed))
        _ = cshim_vpx_control_int(&context, Int32(VP8E_SET_STATIC_THRESHOLD.rawValue), 1)
        _ = cshim_vpx_control_int(&context, Int32(VP8E_SET_NOISE_SENSITIVITY.rawValue), 0)
        // A keyframe at most 9 times an average frame (libwebrtc's rule: half the
        // optimal buffer's worth of frames), or as the settings say: unbounded,
        // a noisy 640x480 keyframe took seconds of a 400 kbit/s link and
        // overflowed its queue.
        let largest =
            settings.largestKeyframe ?? Double(config.rc_buf_optimal_sz) * 0.5
            * Double(max(settings.framesPerSecond, 1))
            / 1000
        _ = cshim_vpx_control_int(&context, Int32(VP8E_SET_MAX_INTRA_BITRATE_PCT.rawValue), Int32(largest * 100))
    }

    /// Aims at another bitrate from the next frame on (congestion control):
    /// libvpx takes a new configuration between frames without a keyframe.
    public func setBitrate(_ bitsPerSecond: Int) throws(CodecError) {
        let kilobits = UInt32(max(bitsPerSecond / 1000, 1))
        guard kilobits != config.rc_target_bitrate else { return }
        config.rc_target_bitrate = kilobits
        guard vpx_codec_enc_config_set(&context, &config) == VPX_CODEC_OK else {
            throw .library("vpx_codec_enc_config_set: \(Self.lastError(&context))")
        }
        bitrate = bitsPerSecond
    }

    /// The quantizer of the last frame encoded, on libvpx's internal 0-127
    /// scale (VP8E_GET_LAST_QUANTIZER): how coarse the rate control had to
    /// be. Values near the top at a given rate mean the picture is too large
    /// for it (libwebrtc's quality scaler acts on it); nil before a frame.
    public var lastQuantizer: Int? {
        guard frameIndex > 0 else { return nil }
        var value: Int32 = -1
        guard cshim_vpx_control_get_int(&context, Int32(VP8E_GET_LAST_QUANTIZER.rawValue), &value) == VPX_CODEC_OK,
            value >= 0
        else { return nil }
        return Int(value)
    }

    deinit { vpx_codec_destroy(&context) }

    /// Encodes one frame; `keyframe` forces an intra frame (after a PLI or FIR).
    public func encode(_ frame: VideoFrame, keyframe: Bool = false) throws(CodecError) -> [Encoded] {
        guard frame.width == settings.width, frame.height == settings.height else {
            throw .badInput("frame is \(frame.width)x\(frame.height), encoder is \(settings.width)x\(settings.height)")
        }
        return try frame.data.withUnsafeBufferPointer { buffer throws(CodecError) in
            try encode(i420: UnsafeRawBufferPointer(buffer), keyframe: keyframe)
        }
    }

    /// Encodes one I420 picture of the encoder's size from memory the caller
    /// owns (a mapped file, say): libvpx only reads it, so nothing is copied.
    public func encode(i420 picture: UnsafeRawBufferPointer, keyframe: Bool = false) throws(CodecError) -> [Encoded] {
        guard picture.count >= VideoFrame.byteCount(width: settings.width, height: settings.height),
            let base = picture.baseAddress
        else {
            throw .badInput(
                "an I420 picture of \(settings.width)x\(settings.height) needs more than \(picture.count) bytes")
        }
        vpx_img_wrap(
            &image, VPX_IMG_FMT_I420, UInt32(settings.width), UInt32(settings.height), 1,
            UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self)))
        let flags: vpx_enc_frame_flags_t = keyframe ? vpx_enc_frame_flags_t(VPX_EFLAG_FORCE_KF) : 0
        let status = vpx_codec_encode(&context, &image, frameIndex, 1, flags, UInt(VPX_DL_REALTIME))
        frameIndex += 1
        guard status == VPX_CODEC_OK else { throw .library("vpx_codec_encode: \(Self.lastError(&context))") }
        var packets: [Encoded] = []
        var iterator: vpx_codec_iter_t?
        while let packet = vpx_codec_get_cx_data(&context, &iterator) {
            guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let frameData = packet.pointee.data.frame
            let bytes = UnsafeRawBufferPointer(start: frameData.buf, count: frameData.sz)
            packets.append(Encoded(data: Array(bytes), isKeyframe: frameData.flags & UInt32(VPX_FRAME_IS_KEY) != 0))
        }
        return packets
    }

    static func lastError(_ context: UnsafeMutablePointer<vpx_codec_ctx_t>) -> String {
        vpx_codec_error(context).map { String(cString: $0) } ?? "unknown error"
    }
}
