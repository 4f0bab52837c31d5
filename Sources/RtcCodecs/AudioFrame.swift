/// A block of 16-bit PCM, channels interleaved (L R L R … for stereo).
public struct AudioFrame: Sendable, Equatable {
    /// The samples, channels interleaved.
    public var samples: [Int16]
    /// Channels interleaved in `samples` (1 or 2).
    public var channels: Int
    /// Samples per second per channel.
    public var sampleRate: Int

    /// A frame of interleaved samples.
    public init(samples: [Int16], channels: Int, sampleRate: Int) {
        self.samples = samples
        self.channels = channels
        self.sampleRate = sampleRate
    }

    /// Samples per channel.
    public var frameCount: Int { channels > 0 ? samples.count / channels : 0 }

    /// `frames` samples per channel of silence.
    public static func silence(frames: Int, channels: Int, sampleRate: Int) -> AudioFrame {
        AudioFrame(samples: [Int16](repeating: 0, count: frames * channels), channels: channels, sampleRate: sampleRate)
    }
}
