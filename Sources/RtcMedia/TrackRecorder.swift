import RtcCodecs
import RtcContainers
import RtcMediaFiles

/// One file a `MediaReceiver` writes for its track, one type per format
/// (`MediaReceiver.RecordFormat`). Each is fed only what its format takes and
/// ignores the rest; each opens its file when its first media comes, so a
/// track that never received writes nothing. Called with the receiver's lock
/// held, on whichever thread holds it.
protocol TrackRecorder: AnyObject {
    /// The file, once it is open.
    var path: String? { get }
    /// Audio starts `leadSeconds` after the recording's start (the silence to put first).
    func audioStarts(leadSeconds: Double) throws(MediaFileError)
    /// An Opus packet as it arrived, in play order.
    func opus(_ payload: [UInt8]) throws(MediaFileError)
    /// Decoded or concealed audio, 48 kHz stereo.
    func pcm(_ samples: [Int16]) throws(MediaFileError)
    /// A whole VP8 frame at `milliseconds` on the recording's clock.
    func vp8(_ frame: [UInt8], milliseconds: UInt64, keyframe: Bool) throws(MediaFileError)
    /// A decoded picture and its RTP timestamp (90 kHz).
    func picture(_ picture: VideoFrame, timestamp: UInt32) throws(MediaFileError)
    /// Writes what is held and closes the file.
    func close() throws(MediaFileError)
}

extension TrackRecorder {
    func audioStarts(leadSeconds: Double) throws(MediaFileError) {}
    func opus(_ payload: [UInt8]) throws(MediaFileError) {}
    func pcm(_ samples: [Int16]) throws(MediaFileError) {}
    func vp8(_ frame: [UInt8], milliseconds: UInt64, keyframe: Bool) throws(MediaFileError) {}
    func picture(_ picture: VideoFrame, timestamp: UInt32) throws(MediaFileError) {}
}

/// The Opus packets as they came, in an Ogg file (no decoding needed).
final class OggRecorder: TrackRecorder {
    private let file: String
    private var writer: OggOpusWriter?
    var path: String? { writer?.path }

    init(path: String) { file = path }

    func opus(_ payload: [UInt8]) throws(MediaFileError) {
        if writer == nil { writer = try OggOpusWriter(path: file, channels: 2, preSkip: 0) }
        try writer?.append(payload)
    }

    func close() throws(MediaFileError) { writer?.close() }
}

/// Decoded audio as 16-bit PCM, preceded by the silence before the track's
/// first packet so that it lines up with the call's other tracks.
final class WavRecorder: TrackRecorder {
    private let file: String
    private var writer: WavWriter?
    var path: String? { writer?.path }

    init(path: String) { file = path }

    func audioStarts(leadSeconds: Double) throws(MediaFileError) {
        let writer = try open()
        // Within 30 s: a sender's clock further off is wrong, not a late start.
        if leadSeconds > 0.001, leadSeconds < 30 {
            try writer.append([Int16](repeating: 0, count: Int(leadSeconds * 48000) * 2))
        }
    }

    func pcm(_ samples: [Int16]) throws(MediaFileError) { try open().append(samples) }

    func close() throws(MediaFileError) { writer?.close() }

    private func open() throws(MediaFileError) -> WavWriter {
        if let writer { return writer }
        let made = try WavWriter(path: file, channels: 2, sampleRate: 48000)
        writer = made
        return made
    }
}

/// The VP8 frames as they came, in an IVF file, from the first keyframe
/// (whose header gives the picture size).
final class IvfRecorder: TrackRecorder {
    private let file: String
    private var writer: IvfWriter?
    var path: String? { writer?.path }

    init(path: String) { file = path }

    func vp8(_ frame: [UInt8], milliseconds: UInt64, keyframe: Bool) throws(MediaFileError) {
        if writer == nil {
            guard keyframe, let size = Vp8Payload.keyframeSize(frame) else { return }
            writer = try IvfWriter(path: file, width: size.width, height: size.height)
        }
        try writer?.append(frame, milliseconds: milliseconds)
    }

    func close() throws(MediaFileError) { writer?.close() }
}

/// Decoded pictures, raw, in a Y4M file. Y4M states a frame rate, so the
/// file opens with the second picture, at the rate their RTP timestamps
/// show; a track that showed one picture only gets it at 30 fps on close.
/// Y4M has one picture size: pictures of another (a sender that shrank its
/// pictures for a slow link) are scaled to the first picture's.
final class Y4mRecorder: TrackRecorder {
    private let file: String
    private var writer: Y4mWriter?
    private var first: (picture: VideoFrame, timestamp: UInt32)?
    private let scaler = PictureScaler()
    var path: String? { writer?.path }

    init(path: String) { file = path }

    func picture(_ picture: VideoFrame, timestamp: UInt32) throws(MediaFileError) {
        if writer == nil {
            guard let first else {
                self.first = (picture, timestamp)
                return
            }
            let delta = Double(Int32(bitPattern: timestamp &- first.timestamp))
            let rate = delta > 0 ? min(max(Int((90000 / delta).rounded()), 1), 120) : 30
            let made = try Y4mWriter(
                path: file, width: first.picture.width, height: first.picture.height, framesPerSecond: rate)
            writer = made
            try made.append(first.picture)
        }
        guard let first else { return }
        let (width, height) = (first.picture.width, first.picture.height)
        if picture.width == width, picture.height == height {
            try writer?.append(picture)
        } else if let resized = scaler.scale(picture, width: width, height: height) {
            try writer?.append(resized)
        }
    }

    func close() throws(MediaFileError) {
        if writer == nil, let first, first.picture.width > 0 {
            let made = try Y4mWriter(
                path: file, width: first.picture.width, height: first.picture.height, framesPerSecond: 30)
            writer = made
            try made.append(first.picture)
        }
        writer?.close()
    }
}
