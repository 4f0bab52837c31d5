import Foundation
import RtcCodecs
import RtcPeer

/// Audio the application makes itself (a synthesiser, a TTS engine, a
/// microphone of its own): it pushes 16-bit PCM at 48 kHz, mono or stereo,
/// and the source encodes it to Opus in 20 ms frames as the sender asks.
/// `push` may be called from any thread; the sender waits for audio when
/// there is none yet. `finish()` ends the track.
public final class LiveAudioSource: MediaSource, @unchecked Sendable {
    /// Audio.
    public let kind = MediaKind.audio
    /// What it plays, for logs.
    public let label: String
    /// Channels the application's frames have (1 or 2).
    public let channels: Int
    private let encoder: OpusAudioEncoder
    private let condition = NSCondition()
    private var pending: [Int16] = []
    private var finished = false
    private var frame = 0
    /// PCM held at most (interleaved samples): 2 s; older audio is dropped when the app pushes faster.
    private let limit: Int
    /// Opus frames encoded so far.
    public private(set) var framesEncoded = 0
    /// Samples dropped because the application pushed more than 2 s ahead.
    public private(set) var droppedSamples = 0

    /// A source that encodes the 48 kHz PCM the application delivers.
    public init(channels: Int = 2, bitrate: Int = 64_000) throws {
        self.channels = min(max(channels, 1), 2)
        encoder = try OpusAudioEncoder(.init(channels: self.channels, bitrate: bitrate))
        limit = 48000 * 2 * self.channels
        label = "live audio (48 kHz, \(self.channels) ch → Opus)"
    }

    /// Congestion control lowers the encoder's rate (never above the one asked for); the sender's thread calls it.
    public func setTargetBitrate(_ bitsPerSecond: Int, loss: Double) -> Bool {
        encoder.setBitrate(min(bitsPerSecond, encoder.settings.bitrate))
        encoder.setExpectedLoss(percent: Int((loss * 100).rounded()))
        return true
    }

    /// Adds interleaved PCM (48 kHz, `channels` channels).
    public func push(_ samples: [Int16]) {
        condition.withLock {
            pending += samples
            if pending.count > limit {
                droppedSamples += pending.count - limit
                pending.removeFirst(pending.count - limit)
            }
            condition.signal()
        }
    }

    /// No more audio: the sender ends once what was pushed has gone.
    public func finish() {
        condition.withLock {
            finished = true
            condition.signal()
        }
    }

    /// On the sender's thread: the next 20 ms, waiting up to a second for the
    /// application (then silence goes out, so that the receiver does not stall).
    public func next() throws -> EncodedSample? {
        let size = OpusAudioEncoder.frameSamples * channels
        let block: [Int16]? = condition.withLock {
            let deadline = Date().addingTimeInterval(1)
            while pending.count < size, !finished {
                if !condition.wait(until: deadline) { break }
            }
            if pending.isEmpty, finished { return nil }
            let taken = Array(pending.prefix(size))
            pending.removeFirst(taken.count)
            return taken + [Int16](repeating: 0, count: size - taken.count)
        }
        guard let block else { return nil }
        let packet = try encoder.encode(block)
        defer { frame += 1 }
        framesEncoded += 1
        return EncodedSample(data: packet, time: Double(frame) * 0.02)
    }

    /// A live source does not rewind.
    public func rewind() {}

    /// The sender stops: no more frames are waited for.
    public func stop() { finish() }
}

/// Video the application makes itself: it pushes I420 pictures (any even
/// size; a new size starts a new encoder) and the source encodes them to VP8
/// in real time, timed by when they were pushed. The sender waits for
/// pictures when there are none; `finish()` ends the track.
public final class LiveVideoSource: MediaSource, @unchecked Sendable {
    /// Video.
    public let kind = MediaKind.video
    /// What it plays, for logs.
    public let label = "live video (I420 → VP8)"
    private let encoder: PictureEncoder
    private let condition = NSCondition()
    private var pictures: [(picture: VideoFrame, time: Double)] = []
    private var finished = false
    private var origin: ContinuousClock.Instant?
    /// VP8 frames encoded so far.
    public var framesEncoded: Int { encoder.framesEncoded }
    /// The size its last picture was encoded at.
    public var encodedSize: (width: Int, height: Int)? { encoder.encodedSize }
    /// Pictures dropped because the application pushed faster than they were sent (a queue of 30).
    public private(set) var droppedPictures = 0

    /// A source that encodes the I420 pictures the application delivers (bitrate: from the picture size if nil).
    public init(framesPerSecond: Int = 30, bitrate: Int? = nil) {
        encoder = PictureEncoder(framesPerSecond: framesPerSecond, bitrate: bitrate)
    }

    /// Adds a picture, timed now (or at `time` seconds from the first picture).
    public func push(_ picture: VideoFrame, time: Double? = nil) {
        condition.withLock {
            let start = origin ?? .now
            origin = start
            let when = time ?? (ContinuousClock.now - start).inSeconds
            pictures.append((picture, when))
            if pictures.count > 30 {
                pictures.removeFirst()
                droppedPictures += 1
            }
            condition.signal()
        }
    }

    /// No more pictures: the sender ends after the last one.
    public func finish() {
        condition.withLock {
            finished = true
            condition.signal()
        }
    }

    /// The next picture delivered, encoded; waits for it; nil once finished.
    public func next() throws -> EncodedSample? {
        while true {
            let item: (picture: VideoFrame, time: Double)? = condition.withLock {
                while pictures.isEmpty, !finished { condition.wait() }
                return pictures.isEmpty ? nil : pictures.removeFirst()
            }
            guard let item else { return nil }
            // The rate control may skip a picture: then the next one is tried.
            if let sample = try encoder.encode(item.picture, time: item.time) { return sample }
        }
    }

    /// A live source cannot go back.
    public func rewind() {}

    /// The sender stops: no more pictures are waited for.
    public func stop() { finish() }

    /// The next picture is encoded as a keyframe.
    public func requestKeyframe() { encoder.keyframeWanted = true }

    /// Congestion control's share goes to the VP8 encoder.
    public func setTargetBitrate(_ bitsPerSecond: Int, loss: Double) -> Bool {
        (try? encoder.setTarget(bitsPerSecond)) != nil
    }
}
