import RtcCodecs
import RtcContainers
import RtcMediaFiles
import RtcPeer

/// The audio track of any file libavformat opens. Opus goes out as it is
/// (pass-through, times from the container); anything else is decoded,
/// resampled to 48 kHz (one or two channels) and encoded to Opus in 20 ms frames.
public final class ContainerAudioSource: MediaSource, @unchecked Sendable {
    /// Audio.
    public let kind = MediaKind.audio
    /// The file and what is done with it, for logs.
    public let label: String
    private let container: MediaContainer
    private let track: MediaContainer.Track
    private let start: Double
    private let decoder: TrackDecoder?
    private let encoder: OpusAudioEncoder?
    /// The bitrate asked for: congestion control may lower the encoder's, never raise it above this.
    private let bitrate: Int
    /// Decoded PCM not yet encoded (interleaved).
    private var pending: [Int16] = []
    private var encodedFrames = 0
    private var ended = false
    /// Pass-through: the time of the first packet (times restart from zero).
    private var origin: Double?
    /// Opus frames encoded here (0 when passed through).
    public private(set) var framesEncoded = 0

    /// Opens the file's audio track from `start` seconds on; an error says why it cannot.
    public init(path: String, start: Double = 0, bitrate: Int = 64_000) throws {
        container = try MediaContainer(path: path)
        track = try container.track(.audio)
        self.start = start
        self.bitrate = bitrate
        if track.isOpus {
            decoder = nil
            encoder = nil
            label = "\(path) (audio: Opus, \(track.channels) ch, sent as it is)"
        } else {
            let decoder = try TrackDecoder(container, track: track)
            self.decoder = decoder
            encoder = try OpusAudioEncoder(.init(channels: decoder.channels, bitrate: bitrate))
            label =
                "\(path) (audio: \(track.codec) \(track.sampleRate) Hz, \(track.channels) ch → Opus 48 kHz, \(decoder.channels) ch)"
        }
        if start > 0 { container.seek(to: start) }
    }

    /// The next 20 ms Opus frame, or nil at the end.
    public func next() throws -> EncodedSample? {
        guard let decoder, let encoder else { return nextPassedThrough() }
        let size = OpusAudioEncoder.frameSamples * decoder.channels
        while pending.count < size, !ended {
            let packet = container.nextPacket(of: track)
            if packet == nil { ended = true }
            // Before --start (the seek lands earlier). Without one, nothing is skipped:
            // Opus's first packets have negative times (its pre-skip).
            if let packet, start > 0, packet.time < start { continue }
            for case .audio(let audio) in try decoder.decode(packet) { pending += audio.samples }
        }
        guard !pending.isEmpty else { return nil }
        var block = Array(pending.prefix(size))
        pending.removeFirst(block.count)
        if block.count < size { block += [Int16](repeating: 0, count: size - block.count) }
        let packet = try encoder.encode(block)
        defer { encodedFrames += 1 }
        framesEncoded += 1
        return EncodedSample(data: packet, time: Double(encodedFrames) * 0.02)
    }

    private func nextPassedThrough() -> EncodedSample? {
        while let packet = container.nextPacket(of: track) {
            guard start == 0 || packet.time >= start, OpusAudioDecoder.frameSamples(of: packet.data) != nil else {
                continue
            }
            let first = origin ?? packet.time
            origin = first
            return EncodedSample(data: packet.data, time: packet.time - first)
        }
        return nil
    }

    /// Congestion control lowers the encoder's rate (never above the one asked for); false when passed through.
    public func setTargetBitrate(_ bitsPerSecond: Int, loss: Double) -> Bool {
        guard let encoder else { return false }  // Opus passed through as the file has it
        encoder.setBitrate(min(bitsPerSecond, bitrate))
        encoder.setExpectedLoss(percent: Int((loss * 100).rounded()))
        return true
    }

    /// Back to `start` (for looping).
    public func rewind() {
        container.seek(to: start)
        decoder?.flush()
        pending = []
        encodedFrames = 0
        ended = false
        origin = nil
    }
}

/// The video track of any file libavformat opens. VP8 goes out as it is
/// (pass-through; a keyframe request waits for the file's next keyframe);
/// anything else is decoded, converted to I420 and encoded to VP8 in real time.
public final class ContainerVideoSource: MediaSource, @unchecked Sendable {
    /// Video.
    public let kind = MediaKind.video
    /// The file and what is done with it, for logs.
    public let label: String
    private let container: MediaContainer
    private let track: MediaContainer.Track
    private let start: Double
    private let decoder: TrackDecoder?
    private let pictures: PictureEncoder
    private var decoded: [(picture: VideoFrame, time: Double)] = []
    private var ended = false
    private var origin: Double?
    /// VP8 frames encoded here (0 when passed through).
    public var framesEncoded: Int { pictures.framesEncoded }
    /// The size its last picture was encoded at.
    public var encodedSize: (width: Int, height: Int)? { pictures.encodedSize }

    /// Opens the file's video track from `start` seconds on (bitrate: from the picture size if nil).
    public init(path: String, start: Double = 0, bitrate: Int? = nil) throws {
        container = try MediaContainer(path: path)
        track = try container.track(.video)
        self.start = start
        pictures = PictureEncoder(
            framesPerSecond: Int((track.framesPerSecond ?? 30).rounded()), bitrate: bitrate)
        if track.isVp8 {
            decoder = nil
            label = "\(path) (video: VP8 \(track.width)x\(track.height), sent as it is)"
        } else {
            decoder = try TrackDecoder(container, track: track)
            label = "\(path) (video: \(track.codec) \(track.width)x\(track.height) → VP8)"
        }
        if start > 0 { container.seek(to: start) }
    }

    /// The next VP8 frame, or nil at the end.
    public func next() throws -> EncodedSample? {
        guard let decoder else { return nextPassedThrough() }
        while true {
            while decoded.isEmpty, !ended {
                let packet = container.nextPacket(of: track)
                if packet == nil { ended = true }
                for case .video(let picture, let time) in try decoder.decode(packet) where start == 0 || time >= start {
                    decoded.append((picture, time))
                }
            }
            guard !decoded.isEmpty else { return nil }
            let (picture, time) = decoded.removeFirst()
            let first = origin ?? time
            origin = first
            // The rate control may skip a frame: then the next picture is tried.
            if let sample = try pictures.encode(picture, time: time - first) { return sample }
        }
    }

    private func nextPassedThrough() -> EncodedSample? {
        // From the keyframe the seek landed on (at or before --start): a decoder needs it.
        while let packet = container.nextPacket(of: track) {
            let first = origin ?? packet.time
            origin = first
            let keyframe = packet.data.first.map { $0 & 0x01 == 0 } ?? packet.isKeyframe
            return EncodedSample(data: packet.data, time: packet.time - first, isKeyframe: keyframe)
        }
        return nil
    }

    /// Back to `start` (for looping). Passed through, the next frame is the
    /// keyframe the seek landed on. Encoded here, it is not forced to be one:
    /// the encoder goes on from its last picture, as a camera's does after a
    /// cut. A keyframe at every loop of a 2 s clip was a burst every 2 s
    /// that a 400 kbit/s link took 0.2 s to carry, a freeze at the receiver
    /// each time.
    public func rewind() {
        container.seek(to: start)
        decoder?.flush()
        decoded = []
        ended = false
        origin = nil
    }

    /// The next frame encoded here is a keyframe (pass-through cannot).
    public func requestKeyframe() { pictures.keyframeWanted = true }

    /// Congestion control's share goes to the VP8 encoder; false when VP8 is passed through.
    public func setTargetBitrate(_ bitsPerSecond: Int, loss: Double) -> Bool {
        guard decoder != nil else { return false }  // VP8 passed through as the file has it
        return (try? pictures.setTarget(bitsPerSecond)) != nil
    }
}
