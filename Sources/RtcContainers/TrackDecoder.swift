import CFFmpeg
import RtcCodecs
import RtcMediaFiles

/// Decodes one track of a `MediaContainer` with libavcodec, and converts what
/// comes out to what our encoders take: 48 kHz 16-bit PCM with one or two
/// channels (libswresample), or I420 pictures of the track's size, made even
/// (libswscale).
public final class TrackDecoder: @unchecked Sendable {
    /// What a packet decodes to: 48 kHz interleaved PCM, or an I420 picture and its time in seconds.
    public enum Output {
        case audio(AudioFrame)
        case video(VideoFrame, time: Double)
    }

    /// The track it decodes.
    public let track: MediaContainer.Track
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var resampler: OpaquePointer?
    private var scaler: OpaquePointer?
    private var scalerSize: (width: Int32, height: Int32, format: Int32) = (0, 0, -1)
    private let timeBase: AVRational
    /// Output channels for audio: the track's, at most two.
    public let channels: Int

    /// A decoder for one track of the container.
    public init(_ container: MediaContainer, track: MediaContainer.Track) throws(MediaFileError) {
        self.track = track
        timeBase = container.timeBase(of: track)
        channels = min(max(track.channels, 1), 2)
        guard let parameters = container.parameters(of: track),
            let codec = avcodec_find_decoder(parameters.pointee.codec_id)
        else {
            throw .unsupported(path: container.path, why: "no decoder for its \(track.kind.rawValue) (\(track.codec))")
        }
        guard let context = avcodec_alloc_context3(codec), avcodec_parameters_to_context(context, parameters) >= 0,
            avcodec_open2(context, codec, nil) >= 0, let frame = av_frame_alloc()
        else {
            throw .unsupported(path: container.path, why: "cannot open a decoder for \(track.codec)")
        }
        self.context = context
        self.frame = frame
    }

    deinit {
        avcodec_free_context(&context)
        av_frame_free(&frame)
        swr_free(&resampler)
        sws_freeContext(scaler)
    }

    /// Decodes one packet (nil: the end, drain what is held); what came out, in order.
    public func decode(_ packet: MediaContainer.Packet?) throws(MediaFileError) -> [Output] {
        guard let context, let frame else { return [] }
        let sent: Int32
        if let packet {
            var data = packet.data
            sent = data.withUnsafeMutableBufferPointer { buffer -> Int32 in
                guard let avPacket = av_packet_alloc() else { return -1 }
                defer {
                    var freeing: UnsafeMutablePointer<AVPacket>? = avPacket
                    av_packet_free(&freeing)
                }
                avPacket.pointee.data = buffer.baseAddress
                avPacket.pointee.size = Int32(buffer.count)
                avPacket.pointee.pts = Int64((packet.time * Double(timeBase.den) / Double(timeBase.num)).rounded())
                avPacket.pointee.flags = packet.isKeyframe ? AV_PKT_FLAG_KEY : 0
                return avcodec_send_packet(context, avPacket)
            }
        } else {
            sent = avcodec_send_packet(context, nil)
        }
        // A packet the decoder refuses is skipped (a damaged frame); the stream goes on.
        _ = sent
        var outputs: [Output] = []
        while avcodec_receive_frame(context, frame) >= 0 {
            defer { av_frame_unref(frame) }
            if track.kind == .audio {
                if let audio = resample(frame) { outputs.append(.audio(audio)) }
            } else if let picture = scale(frame) {
                let stamp = frame.pointee.best_effort_timestamp
                let time = stamp == cffmpeg_nopts() ? 0 : Double(stamp) * Double(timeBase.num) / Double(timeBase.den)
                outputs.append(.video(picture, time: time))
            }
        }
        return outputs
    }

    /// After a seek: forget what the decoder holds.
    public func flush() {
        if let context { avcodec_flush_buffers(context) }
    }

    private func resample(_ frame: UnsafeMutablePointer<AVFrame>) -> AudioFrame? {
        if resampler == nil {
            var output = AVChannelLayout()
            av_channel_layout_default(&output, Int32(channels))
            var input = frame.pointee.ch_layout
            if input.nb_channels == 0 { av_channel_layout_default(&input, 1) }
            guard
                swr_alloc_set_opts2(
                    &resampler, &output, AV_SAMPLE_FMT_S16, 48000, &input,
                    AVSampleFormat(rawValue: frame.pointee.format), frame.pointee.sample_rate, 0, nil) >= 0,
                swr_init(resampler) >= 0
            else { return nil }
        }
        let inputCount = frame.pointee.nb_samples
        let capacity = Int(swr_get_out_samples(resampler, inputCount)) + 32
        var samples = [Int16](repeating: 0, count: capacity * channels)
        let produced = samples.withUnsafeMutableBytes { raw -> Int32 in
            var out: UnsafeMutablePointer<UInt8>? = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return withUnsafeMutablePointer(to: &out) { outs in
                frame.pointee.extended_data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { ins in
                    swr_convert(resampler, outs, Int32(capacity), ins, inputCount)
                }
            }
        }
        guard produced > 0 else { return nil }
        samples.removeLast(samples.count - Int(produced) * channels)
        return AudioFrame(samples: samples, channels: channels, sampleRate: 48000)
    }

    private func scale(_ frame: UnsafeMutablePointer<AVFrame>) -> VideoFrame? {
        let width = frame.pointee.width
        let height = frame.pointee.height
        guard width > 0, height > 0 else { return nil }
        // VP8 wants an even size: an odd last row or column is dropped.
        let w = max(Int(width) & ~1, 2)
        let h = max(Int(height) & ~1, 2)
        if scaler == nil || scalerSize != (width, height, frame.pointee.format) {
            sws_freeContext(scaler)
            scaler = sws_getContext(
                width, height, AVPixelFormat(rawValue: frame.pointee.format), Int32(w), Int32(h), AV_PIX_FMT_YUV420P,
                SWS_BILINEAR, nil, nil, nil)
            scalerSize = (width, height, frame.pointee.format)
        }
        guard let scaler else { return nil }
        let chromaWidth = (w + 1) / 2
        let chromaHeight = (h + 1) / 2
        var data = [UInt8](repeating: 0, count: VideoFrame.byteCount(width: w, height: h))
        data.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var planes: [UnsafeMutablePointer<UInt8>?] = [
                base, base + w * h, base + w * h + chromaWidth * chromaHeight, nil,
            ]
            var strides: [Int32] = [Int32(w), Int32(chromaWidth), Int32(chromaWidth), 0]
            withUnsafePointer(to: &frame.pointee.data) { source in
                source.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { sourcePlanes in
                    withUnsafePointer(to: &frame.pointee.linesize) { lines in
                        lines.withMemoryRebound(to: Int32.self, capacity: 8) { sourceStrides in
                            _ = sws_scale(scaler, sourcePlanes, sourceStrides, 0, height, &planes, &strides)
                        }
                    }
                }
            }
        }
        return VideoFrame(width: w, height: h, data: data)
    }
}
