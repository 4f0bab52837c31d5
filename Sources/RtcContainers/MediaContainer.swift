import CFFmpeg
import RtcMediaFiles

/// A media file as libavformat opens it (MP4, MKV, WebM, MOV, MP3, FLAC,
/// Ogg, WAV, …): its best audio and video tracks, and the packets of one
/// of them in file order with their times. One reader per track (a source
/// owns one), so that audio and video are read at their own pace.
///
/// Not thread-safe: used by the one sender that owns it.
public final class MediaContainer: @unchecked Sendable {
    /// What a track carries.
    public enum TrackKind: String, Sendable { case audio, video }

    /// One track of the file, as libavformat describes it.
    public struct Track: Sendable, Equatable {
        /// The stream index in the file.
        public var index: Int
        /// Audio or video.
        public var kind: TrackKind
        /// libavcodec's name for the codec ("opus", "vp8", "h264", "aac", …).
        public var codec: String
        /// Audio: samples per second (0 for video).
        public var sampleRate = 0
        /// Audio: channels (0 for video).
        public var channels = 0
        /// Video: picture width (0 for audio).
        public var width = 0
        /// Video: picture height (0 for audio).
        public var height = 0
        /// Frames per second, when the file says (video).
        public var framesPerSecond: Double?

        /// Opus: sent as it is, without decoding.
        public var isOpus: Bool { codec == "opus" }
        /// VP8: sent as it is, without decoding.
        public var isVp8: Bool { codec == "vp8" }
    }

    /// One compressed packet of a track, as the file holds it.
    public struct Packet {
        /// The packet's bytes.
        public var data: [UInt8]
        /// Seconds from the file's start (its presentation time).
        public var time: Double
        /// Whether the file marks it a keyframe.
        public var isKeyframe: Bool
    }

    /// The file it reads.
    public let path: String
    /// The file's audio track (the one libavformat calls best), if any.
    public let audio: Track?
    /// The file's video track (the one libavformat calls best), if any.
    public let video: Track?

    /// What libavformat is given for `path`, and whether it may read local
    /// files only. A path is a file: `file:` in front keeps libavformat from
    /// taking `concat:…`, `subfile,…` or `http:…` in it as a protocol, and the
    /// whitelist keeps a playlist or a reference inside the file from
    /// reaching the network or another protocol. A URL (`scheme://…`) is the
    /// user's choice and goes as it is.
    static func input(_ path: String) -> (url: String, localOnly: Bool) {
        if let scheme = path.range(of: "://"), !path[..<scheme.lowerBound].isEmpty,
            path[..<scheme.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" }),
            !path.lowercased().hasPrefix("file://")
        {
            return (path, false)
        }
        return (path.hasPrefix("file:") ? path : "file:" + path, true)
    }
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private let packet: UnsafeMutablePointer<AVPacket>

    /// Opens any file libavformat reads and finds its tracks; an error says why it cannot.
    /// A path is read as a local file only (`Self.input`); a URL the user
    /// names (`scheme://…`) goes to libavformat as it is.
    public init(path: String) throws(MediaFileError) {
        self.path = path
        var context: UnsafeMutablePointer<AVFormatContext>?
        let (url, localOnly) = Self.input(path)
        var options: OpaquePointer?
        if localOnly { av_dict_set(&options, "protocol_whitelist", "file", 0) }
        defer { av_dict_free(&options) }
        guard avformat_open_input(&context, url, nil, &options) == 0, let context else {
            throw .cannotOpen(path)
        }
        guard avformat_find_stream_info(context, nil) >= 0, let packet = av_packet_alloc() else {
            var closing: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&closing)
            throw .malformed(path: path, why: "libavformat cannot read its streams")
        }
        format = context
        self.packet = packet
        audio = Self.track(in: context, AVMEDIA_TYPE_AUDIO)
        video = Self.track(in: context, AVMEDIA_TYPE_VIDEO)
    }

    deinit {
        var packet: UnsafeMutablePointer<AVPacket>? = self.packet
        av_packet_free(&packet)
        avformat_close_input(&format)
    }

    /// The track of `kind`, or a clear error that says what the file has.
    public func track(_ kind: TrackKind) throws(MediaFileError) -> Track {
        if let track = kind == .audio ? audio : video { return track }
        let has = [audio, video].compactMap { $0.map { "\($0.kind.rawValue) (\($0.codec))" } }
        throw .unsupported(
            path: path,
            why: "no \(kind.rawValue) track"
                + (has.isEmpty ? "; no audio or video at all" : "; it has " + has.joined(separator: ", ")))
    }

    private static func track(in context: UnsafeMutablePointer<AVFormatContext>, _ type: AVMediaType) -> Track? {
        let index = av_find_best_stream(context, type, -1, -1, nil, 0)
        guard index >= 0, let stream = context.pointee.streams[Int(index)], let parameters = stream.pointee.codecpar
        else { return nil }
        let name = avcodec_get_name(parameters.pointee.codec_id).map { String(cString: $0) } ?? "unknown"
        var track = Track(index: Int(index), kind: type == AVMEDIA_TYPE_AUDIO ? .audio : .video, codec: name)
        track.sampleRate = Int(parameters.pointee.sample_rate)
        track.channels = Int(parameters.pointee.ch_layout.nb_channels)
        track.width = Int(parameters.pointee.width)
        track.height = Int(parameters.pointee.height)
        let rate = stream.pointee.avg_frame_rate
        if rate.num > 0, rate.den > 0 { track.framesPerSecond = Double(rate.num) / Double(rate.den) }
        return track
    }

    /// The codec parameters of a track (for its decoder).
    func parameters(of track: Track) -> UnsafeMutablePointer<AVCodecParameters>? {
        format?.pointee.streams[track.index]?.pointee.codecpar
    }

    func timeBase(of track: Track) -> AVRational {
        format?.pointee.streams[track.index]?.pointee.time_base ?? AVRational(num: 1, den: 1)
    }

    /// The next packet of `track`, or nil at the end of the file.
    public func nextPacket(of track: Track) -> Packet? {
        guard let format else { return nil }
        let base = timeBase(of: track)
        while av_read_frame(format, packet) >= 0 {
            defer { av_packet_unref(packet) }
            guard Int(packet.pointee.stream_index) == track.index, packet.pointee.size > 0,
                let data = packet.pointee.data
            else { continue }
            let stamp = packet.pointee.pts != cffmpeg_nopts() ? packet.pointee.pts : packet.pointee.dts
            let time = stamp == cffmpeg_nopts() ? 0 : Double(stamp) * Double(base.num) / Double(base.den)
            return Packet(
                data: Array(UnsafeBufferPointer(start: data, count: Int(packet.pointee.size))), time: time,
                isKeyframe: packet.pointee.flags & AV_PKT_FLAG_KEY != 0)
        }
        return nil
    }

    /// Back to `seconds` from the start (the keyframe at or before it, for video).
    public func seek(to seconds: Double) {
        guard let format else { return }
        let target = Int64(max(seconds, 0) * Double(AV_TIME_BASE))
        _ = av_seek_frame(format, -1, target, AVSEEK_FLAG_BACKWARD)
    }
}
