import CFFmpeg
import RtcCodecs
import RtcMediaFiles

/// One WebM file with an Opus and/or a VP8 track, written by libavformat's
/// Matroska muxer from packets as they were received (no re-encoding).
/// Clusters of at most a second are flushed as they complete, in a segment
/// of unknown size until the trailer: the file plays while it is being
/// written, and still plays up to its last cluster if the process is killed.
///
/// The header needs every track's parameters, and VP8's picture size comes
/// with the first keyframe: packets before that are held (a few seconds at most).
/// Not thread-safe: `WebmRecording` (RtcMedia) serialises its callers.
public final class WebmWriter: @unchecked Sendable {
    /// Which track a packet goes to.
    public enum Track: Sendable { case audio, video }

    /// The file it writes.
    public let path: String
    private let wantsAudio: Bool
    private let wantsVideo: Bool
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var output: DescriptorOutput?
    private var audioIndex: Int32 = -1
    private var videoIndex: Int32 = -1
    private var videoSize: (width: Int32, height: Int32)?
    private var headerWritten = false
    private var held: [(track: Track, data: [UInt8], milliseconds: Int64, keyframe: Bool)] = []
    private var lastMilliseconds: [Track: Int64] = [:]
    /// Packets held before the header at most (about 10 s of audio).
    static let maxHeld = 500

    /// A WebM file with an Opus track, a VP8 track or both.
    public init(path: String, audio: Bool, video: Bool) throws(MediaFileError) {
        self.path = path
        wantsAudio = audio
        wantsVideo = video
        guard audio || video else { throw .writeFailed("\(path): a WebM recording needs a track") }
        guard avformat_alloc_output_context2(&context, nil, "webm", path) >= 0, let context else {
            throw .writeFailed("\(path): libavformat has no WebM muxer")
        }
        // A new file of our own (0600, never over an existing one or through a link).
        do { output = try DescriptorOutput(path: path) } catch {
            avformat_free_context(context)
            self.context = nil
            throw error
        }
        context.pointee.pb = output?.context
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
    }

    deinit { close() }

    /// One received packet: an Opus packet, or a whole VP8 frame; `milliseconds` on the recording's clock.
    public func write(_ track: Track, _ data: [UInt8], milliseconds: Int64, keyframe: Bool = false)
        throws(MediaFileError)
    {
        guard context != nil, !data.isEmpty else { return }
        if track == .video, videoSize == nil {
            // Nothing before the first keyframe plays; its header holds the picture size.
            guard keyframe, let size = Vp8Payload.keyframeSize(data) else { return }
            videoSize = (Int32(size.width), Int32(size.height))
        }
        if !headerWritten {
            guard !wantsVideo || videoSize != nil else {
                if held.count < Self.maxHeld { held.append((track, data, milliseconds, keyframe)) }
                return
            }
            try writeHeader()
            let waiting = held
            held = []
            for packet in waiting.sorted(by: { $0.milliseconds < $1.milliseconds }) {
                try append(packet.track, packet.data, packet.milliseconds, packet.keyframe)
            }
        }
        try append(track, data, milliseconds, keyframe)
    }

    /// Writes the trailer (cues, duration) and closes the file. A file never
    /// closed still plays, up to its last cluster.
    public func close() {
        guard let context else { return }
        // At close nobody is left to tell: a header that cannot be written leaves an empty file, as no media would.
        if !headerWritten, !held.isEmpty, !wantsVideo || videoSize != nil { try? writeHeader() }
        if headerWritten { av_write_trailer(context) }
        context.pointee.pb = nil
        output?.close()
        output = nil
        avformat_free_context(context)
        self.context = nil
    }

    private func writeHeader() throws(MediaFileError) {
        guard let context else { return }
        if wantsAudio {
            guard let stream = avformat_new_stream(context, nil), let parameters = stream.pointee.codecpar else {
                throw .writeFailed("\(path): cannot add the audio track")
            }
            parameters.pointee.codec_type = AVMEDIA_TYPE_AUDIO
            parameters.pointee.codec_id = AV_CODEC_ID_OPUS
            parameters.pointee.sample_rate = 48000
            av_channel_layout_default(&parameters.pointee.ch_layout, 2)
            // OpusHead (RFC 7845 §5.1): version 1, 2 channels, no pre-skip, 48 kHz, no gain, family 0.
            let head: [UInt8] = Array("OpusHead".utf8) + [1, 2, 0, 0, 0x80, 0xBB, 0, 0, 0, 0, 0]
            guard let extra = av_mallocz(head.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
                throw .writeFailed("\(path): out of memory")
            }
            extra.copyMemory(from: head, byteCount: head.count)
            parameters.pointee.extradata = extra.assumingMemoryBound(to: UInt8.self)
            parameters.pointee.extradata_size = Int32(head.count)
            stream.pointee.time_base = AVRational(num: 1, den: 1000)
            audioIndex = stream.pointee.index
        }
        if wantsVideo, let videoSize {
            guard let stream = avformat_new_stream(context, nil), let parameters = stream.pointee.codecpar else {
                throw .writeFailed("\(path): cannot add the video track")
            }
            parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
            parameters.pointee.codec_id = AV_CODEC_ID_VP8
            parameters.pointee.width = videoSize.width
            parameters.pointee.height = videoSize.height
            stream.pointee.time_base = AVRational(num: 1, den: 1000)
            videoIndex = stream.pointee.index
        }
        // Interleaving waits for every track at most a second (a track that
        // stops must not hold the other back for libavformat's default 10 s).
        context.pointee.max_interleave_delta = 1_000_000
        var options: OpaquePointer?
        // A cluster at most every second, flushed as it completes. The segment's
        // size stays "unknown" until the trailer fills it in (with cues and the
        // duration): a file cut off before that still plays up to its last cluster.
        av_dict_set(&options, "cluster_time_limit", "1000", 0)
        av_dict_set(&options, "flush_packets", "1", 0)
        defer { av_dict_free(&options) }
        guard avformat_write_header(context, &options) >= 0 else {
            throw .writeFailed("\(path): the WebM header could not be written")
        }
        headerWritten = true
    }

    private func append(_ track: Track, _ data: [UInt8], _ milliseconds: Int64, _ keyframe: Bool) throws(MediaFileError)
    {
        guard let context else { return }
        let index = track == .audio ? audioIndex : videoIndex
        guard index >= 0 else { return }
        // Timestamps only go forward within a track (a late packet is stamped at the last time).
        let stamp = max(milliseconds, lastMilliseconds[track] ?? 0)
        lastMilliseconds[track] = stamp
        guard let packet = av_packet_alloc() else { throw .writeFailed("\(path): out of memory") }
        defer {
            var freeing: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&freeing)
        }
        guard av_new_packet(packet, Int32(data.count)) >= 0, let target = packet.pointee.data else {
            throw .writeFailed("\(path): out of memory")
        }
        data.withUnsafeBufferPointer { bytes in
            if let base = bytes.baseAddress { target.update(from: base, count: bytes.count) }
        }
        packet.pointee.stream_index = index
        let base = context.pointee.streams[Int(index)]?.pointee.time_base ?? AVRational(num: 1, den: 1000)
        let scaled = av_rescale_q(stamp, AVRational(num: 1, den: 1000), base)
        packet.pointee.pts = scaled
        packet.pointee.dts = scaled
        if keyframe || track == .audio { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        guard av_interleaved_write_frame(context, packet) >= 0 else {
            throw .writeFailed("\(path): a packet could not be written")
        }
        avio_flush(context.pointee.pb)
    }
}
