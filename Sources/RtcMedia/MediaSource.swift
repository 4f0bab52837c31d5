import RtcCodecs
import RtcMediaFiles
import RtcPeer

/// One encoded frame ready to send: an Opus packet or a VP8 frame.
public struct EncodedSample: Sendable, Equatable {
    public var data: [UInt8]
    /// Media time of the sample from the start of the source, seconds.
    public var time: Double
    public var isKeyframe: Bool

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
}

extension MediaSource {
    public func requestKeyframe() {}
    public var framesEncoded: Int { 0 }
}

/// Opens a media file as a source by its extension: .wav, .opus/.ogg (Ogg Opus),
/// .y4m (encoded to VP8), .ivf (VP8 frames sent as they are).
public enum MediaSources {
    public static func open(_ path: String, videoBitrate: Int? = nil) throws -> any MediaSource {
        let lower = path.lowercased()
        if lower.hasSuffix(".wav") { return try WavAudioSource(path: path) }
        if lower.hasSuffix(".opus") || lower.hasSuffix(".ogg") { return try OggOpusSource(path: path) }
        if lower.hasSuffix(".y4m") { return try Y4mVideoSource(path: path, bitrate: videoBitrate) }
        if lower.hasSuffix(".ivf") { return try IvfVideoSource(path: path) }
        throw MediaFileError.unsupported(
            path: path, why: "unknown media file type; use .wav, .opus/.ogg (Ogg Opus), .y4m or .ivf (VP8)")
    }
}

/// PCM from a WAV file, resampled to 48 kHz, encoded to Opus in 20 ms frames.
public final class WavAudioSource: MediaSource, @unchecked Sendable {
    public let kind = MediaKind.audio
    public let label: String
    private let audio: AudioFrame
    private let encoder: OpusAudioEncoder
    private var frame = 0
    public private(set) var framesEncoded = 0

    public init(path: String, bitrate: Int = 64_000) throws {
        let file = try WavFile(path: path).audio
        let channels = min(file.channels, 2)
        audio = Resampler.resample(Resampler.remix(file, to: channels), to: 48000)
        encoder = try OpusAudioEncoder(.init(channels: channels, bitrate: bitrate))
        label = "\(path) (WAV \(file.sampleRate) Hz, \(file.channels) ch → Opus 48 kHz, \(channels) ch)"
    }

    public func next() throws -> EncodedSample? {
        let size = OpusAudioEncoder.frameSamples * audio.channels
        let start = frame * size
        guard start < audio.samples.count else { return nil }
        var block = Array(audio.samples[start..<min(start + size, audio.samples.count)])
        if block.count < size { block += [Int16](repeating: 0, count: size - block.count) }
        let packet = try encoder.encode(block)
        defer { frame += 1 }
        framesEncoded += 1
        return EncodedSample(data: packet, time: Double(frame) * 0.02)
    }

    public func rewind() { frame = 0 }
}

/// Opus packets from an Ogg Opus file, sent as they are.
public final class OggOpusSource: MediaSource, @unchecked Sendable {
    public let kind = MediaKind.audio
    public let label: String
    private let packets: [[UInt8]]
    private var index = 0
    private var time = 0.0

    public init(path: String) throws {
        let file = try OggOpusFile(path: path)
        packets = file.packets
        label = "\(path) (Ogg Opus, \(file.channels) ch, \(file.packets.count) packets)"
    }

    public func next() throws -> EncodedSample? {
        while index < packets.count {
            let packet = packets[index]
            index += 1
            guard let samples = OpusAudioDecoder.frameSamples(of: packet) else { continue }  // skip malformed
            defer { time += Double(samples) / 48000 }
            return EncodedSample(data: packet, time: time)
        }
        return nil
    }

    public func rewind() {
        index = 0
        time = 0
    }
}

/// I420 pictures from a Y4M file, encoded to VP8 in real time.
public final class Y4mVideoSource: MediaSource, @unchecked Sendable {
    public let kind = MediaKind.video
    public let label: String
    private let file: Y4mFile
    private let encoder: Vp8VideoEncoder
    private var index = 0
    private var keyframeWanted = false
    public private(set) var framesEncoded = 0

    /// `bitrate` nil: about 0.06 bit per pixel per frame, 200 kbit/s to 2.5 Mbit/s
    /// (550 kbit/s for 640x480 at 30 fps, about where browsers start).
    public init(path: String, bitrate: Int? = nil) throws {
        file = try Y4mFile(path: path)
        guard file.frameCount > 0 else { throw MediaFileError.malformed(path: path, why: "no frames") }
        let fps = max(Int(file.framesPerSecond.rounded()), 1)
        let rate = bitrate ?? min(max(Int(Double(file.width * file.height * fps) * 0.06), 200_000), 2_500_000)
        encoder = try Vp8VideoEncoder(
            .init(
                width: file.width, height: file.height, framesPerSecond: fps, bitrate: rate,
                keyframeInterval: fps * 10))
        label = "\(path) (Y4M \(file.width)x\(file.height) at \(fps) fps → VP8)"
    }

    public func next() throws -> EncodedSample? {
        while index < file.frameCount {
            let time = Double(index) / file.framesPerSecond
            let forced = keyframeWanted
            keyframeWanted = false
            // The picture is encoded where it lies in the mapped file.
            let encoded =
                try file.withFrame(at: index) { picture in try encoder.encode(i420: picture, keyframe: forced) } ?? []
            index += 1
            framesEncoded += 1
            // The rate control may skip a frame: then the next picture is tried.
            guard let first = encoded.first else { continue }
            return EncodedSample(data: encoded.flatMap(\.data), time: time, isKeyframe: first.isKeyframe)
        }
        return nil
    }

    public func rewind() {
        index = 0
        keyframeWanted = true
    }

    public func requestKeyframe() { keyframeWanted = true }
}

/// VP8 frames from an IVF file, sent as they are (a keyframe request cannot be
/// honoured; the file's own keyframes are what a receiver recovers on).
public final class IvfVideoSource: MediaSource, @unchecked Sendable {
    public let kind = MediaKind.video
    public let label: String
    private let file: IvfFile
    private var index = 0

    public init(path: String) throws {
        file = try IvfFile(path: path)
        guard !file.frames.isEmpty else { throw MediaFileError.malformed(path: path, why: "no frames") }
        label = "\(path) (IVF VP8 \(file.width)x\(file.height), \(file.frames.count) frames)"
    }

    public func next() throws -> EncodedSample? {
        guard index < file.frames.count else { return nil }
        let frame = file.frames[index]
        index += 1
        let first = file.seconds(file.frames[0])
        let keyframe = frame.data.first.map { $0 & 0x01 == 0 } ?? false
        return EncodedSample(data: frame.data, time: file.seconds(frame) - first, isKeyframe: keyframe)
    }

    public func rewind() { index = 0 }
}
