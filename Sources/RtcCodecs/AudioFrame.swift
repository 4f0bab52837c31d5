/// A block of 16-bit PCM, channels interleaved (L R L R … for stereo).
public struct AudioFrame: Sendable, Equatable {
    public var samples: [Int16]
    public var channels: Int
    public var sampleRate: Int

    public init(samples: [Int16], channels: Int, sampleRate: Int) {
        self.samples = samples
        self.channels = channels
        self.sampleRate = sampleRate
    }

    /// Samples per channel.
    public var frameCount: Int { channels > 0 ? samples.count / channels : 0 }

    public static func silence(frames: Int, channels: Int, sampleRate: Int) -> AudioFrame {
        AudioFrame(samples: [Int16](repeating: 0, count: frames * channels), channels: channels, sampleRate: sampleRate)
    }
}
