import RtcCodecs
import RtcContainers
import RtcMediaFiles
import RtcPeer

/// One encoded frame ready to send: an Opus packet or a VP8 frame.
public struct EncodedSample: Sendable, Equatable {
    /// The Opus packet or VP8 frame.
    public var data: [UInt8]
    /// Media time of the sample from the start of the source, seconds.
    public var time: Double
    /// Whether a decoder can start here (video).
    public var isKeyframe: Bool

    /// A sample at a media time.
    public init(data: [UInt8], time: Double, isKeyframe: Bool = false) {
        self.data = data
        self.time = time
        self.isKeyframe = isKeyframe
    }
}

/// Where a sender's frames come from. Sources are owned by one sender and
/// called from it only (not thread-safe on their own).
public protocol MediaSource: AnyObject, Sendable {
    var kind: MediaKind { get }
    /// What it plays, for logs ("tone.opus (Ogg Opus, 2 ch)").
    var label: String { get }
    /// The next sample, or nil at the end of the media.
    func next() throws -> EncodedSample?
    /// Back to the start (for looping). Times restart from zero.
    func rewind()
    /// The peer asked for a keyframe (PLI/FIR); sources that encode make the next frame one.
    func requestKeyframe()
    /// Frames this source encoded itself (0 for pass-through sources).
    var framesEncoded: Int { get }
    /// The picture size its last video frame was encoded at (nil: audio,
    /// pass-through, or nothing encoded yet); smaller than the source's when
    /// the link cannot carry that (`ResolutionLadder`).
    var encodedSize: (width: Int, height: Int)? { get }
    /// The sender stops: a source that waits for its application (a live
    /// source) stops waiting, so that the sender's thread can end. Any thread.
    func stop()
    /// Congestion control's share for this track, bit/s (and the loss the peer
    /// sees, 0-1): a source that encodes aims its encoder there and returns
    /// true; one that passes coded media through cannot, and returns false.
    func setTargetBitrate(_ bitsPerSecond: Int, loss: Double) -> Bool
}

extension MediaSource {
    /// Sources that do not encode cannot make one.
    public func requestKeyframe() {}
    /// Pass-through sources encode nothing.
    public var framesEncoded: Int { 0 }
    /// Audio and pass-through sources encode no pictures.
    public var encodedSize: (width: Int, height: Int)? { nil }
    /// Sources that never wait have nothing to stop.
    public func stop() {}
    /// Pass-through sources send what the file holds, at its rate.
    public func setTargetBitrate(_ bitsPerSecond: Int, loss: Double) -> Bool { false }
}

/// Opens a media file as a source, through libavformat whatever its format
/// (WAV, Ogg Opus, MP3, FLAC, MP4, MKV, WebM, MOV, Y4M, IVF, …): Opus and VP8
/// tracks pass through as they are, anything else is decoded and encoded.
/// The readers this project wrote before (WAV, Ogg Opus, Y4M and IVF
/// sources) were measured against this path and dropped: for the test media,
/// WAV took 0.45 s against 0.055 s (our resampler ran over the whole file
/// before the first frame), Y4M 15-17 ms against 16-23 ms for 30 frames
/// (the VP8 encoder is the cost either way) and IVF 0.7 ms against 0.6 ms
/// for 150 frames (debug build, one run each, twice).
public enum MediaSources {
    /// The track of `kind` in the file (nil: audio if it has audio, else
    /// video), from `start` seconds on.
    public static func open(
        _ path: String, kind: MediaKind? = nil, start: Double = 0, videoBitrate: Int? = nil
    ) throws -> any MediaSource {
        let wanted = try kind ?? tracks(in: path).first ?? .audio
        switch wanted {
        case .audio: return try ContainerAudioSource(path: path, start: start)
        case .video: return try ContainerVideoSource(path: path, start: start, bitrate: videoBitrate)
        }
    }

    /// The kinds of track a file has (audio first), as libavformat sees it.
    public static func tracks(in path: String) throws -> [MediaKind] {
        let container = try MediaContainer(path: path)
        return (container.audio != nil ? [MediaKind.audio] : []) + (container.video != nil ? [.video] : [])
    }
}
