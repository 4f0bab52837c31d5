import RtcCodecs
import RtcContainers
import RtcMediaFiles
import RtcPeer

/// The audio track of any file libavformat opens. Opus goes out as it is
/// (pass-through, times from the container); anything else is decoded,
/// resampled to 48 kHz (one or two channels) and encoded to Opus in 20 ms frames.
public final class ContainerAudioSource: MediaSource, @unchecked Sendable {
    public let kind = MediaKind.audio
    public let label: String
    private let container: MediaContainer
    private let track: MediaContainer.Track
    private let start: Double
    private let decoder: TrackDecoder?
    private let encoder: OpusAudioEncoder?
    /// Decoded PCM not yet encoded (interleaved).
    private var pending: [Int16] = []
    private var encodedFrames = 0
    private var ended = false
    /// Pass-through: the time of the first packet (times restart from zero).
    private var origin: Double?
    public private(set) var framesEncoded = 0

    public init(path: String, start: Double = 0, bitrate: Int = 64_000) throws {
        container = try MediaContainer(path: path)
        track = try container.track(.audio)
        self.start = start
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
    public let kind = MediaKind.video
    public let label: String
    private let container: MediaContainer
    private let track: MediaContainer.Track
    private let start: Double
    private let decoder: TrackDecoder?
    private let bitrate: Int?
    private var encoder: Vp8VideoEncoder?
    private var decoded: [(picture: VideoFrame, time: Double)] = []
    private var ended = false
    private var origin: Double?
    private var keyframeWanted = false
    public private(set) var framesEncoded = 0

    public init(path: String, start: Double = 0, bitrate: Int? = nil) throws {
        container = try MediaContainer(path: path)
        track = try container.track(.video)
        self.start = start
        self.bitrate = bitrate
        if track.isVp8 {
            decoder = nil
            label = "\(path) (video: VP8 \(track.width)x\(track.height), sent as it is)"
        } else {
            decoder = try TrackDecoder(container, track: track)
            label = "\(path) (video: \(track.codec) \(track.width)x\(track.height) → VP8)"
        }
        if start > 0 { container.seek(to: start) }
    }

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
            let encoder = try encoder(for: picture)
            let forced = keyframeWanted
            keyframeWanted = false
            let encoded = try picture.data.withUnsafeBytes { try encoder.encode(i420: $0, keyframe: forced) }
            framesEncoded += 1
            // The rate control may skip a frame: then the next picture is tried.
            guard let head = encoded.first else { continue }
            return EncodedSample(data: encoded.flatMap(\.data), time: time - first, isKeyframe: head.isKeyframe)
        }
    }

    /// The encoder for this picture size (made at the first picture; a new size makes a new one).
    private func encoder(for picture: VideoFrame) throws -> Vp8VideoEncoder {
        if let encoder, encoder.settings.width == picture.width, encoder.settings.height == picture.height {
            return encoder
        }
        let fps = max(Int((track.framesPerSecond ?? 30).rounded()), 1)
        let rate =
            bitrate ?? min(max(Int(Double(picture.width * picture.height * fps) * 0.06), 200_000), 2_500_000)
        let made = try Vp8VideoEncoder(
            .init(
                width: picture.width, height: picture.height, framesPerSecond: fps, bitrate: rate,
                keyframeInterval: fps * 10))
        encoder = made
        return made
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

    public func rewind() {
        container.seek(to: start)
        decoder?.flush()
        decoded = []
        ended = false
        origin = nil
        keyframeWanted = true
    }

    public func requestKeyframe() { keyframeWanted = true }
}
