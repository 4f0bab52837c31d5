import Foundation
import RtcCodecs

/// Sample-rate conversion with a windowed-sinc (Lanczos, a = 8) interpolator,
/// low-passed at the lower of the two Nyquist frequencies. Whole buffers at
/// a time: sources are files read into memory.
public enum Resampler {
    public static func resample(_ audio: AudioFrame, to rate: Int) -> AudioFrame {
        guard audio.sampleRate != rate, audio.sampleRate > 0, rate > 0, audio.frameCount > 0 else {
            return AudioFrame(samples: audio.samples, channels: audio.channels, sampleRate: rate)
        }
        let channels = audio.channels
        let inputFrames = audio.frameCount
        let step = Double(audio.sampleRate) / Double(rate)
        let outputFrames = Int((Double(inputFrames) / step).rounded(.down))
        // Below 1 when downsampling: the kernel widens to cut above the new Nyquist.
        let cutoff = min(1.0, 1.0 / step)
        let lobes = 8.0
        let radius = Int((lobes / cutoff).rounded(.up))
        var output = [Int16](repeating: 0, count: outputFrames * channels)
        audio.samples.withUnsafeBufferPointer { input in
            for frame in 0..<outputFrames {
                let position = Double(frame) * step
                let center = Int(position)
                var sums = [Double](repeating: 0, count: channels)
                var weightSum = 0.0
                for tap in (center - radius + 1)...(center + radius) where tap >= 0 && tap < inputFrames {
                    let x = (position - Double(tap)) * cutoff
                    let weight = lanczos(x, lobes)
                    weightSum += weight
                    for channel in 0..<channels { sums[channel] += weight * Double(input[tap * channels + channel]) }
                }
                let scale = weightSum != 0 ? 1 / weightSum : 0
                for channel in 0..<channels {
                    let value = (sums[channel] * scale).rounded()
                    output[frame * channels + channel] = Int16(max(-32768, min(32767, value)))
                }
            }
        }
        return AudioFrame(samples: output, channels: channels, sampleRate: rate)
    }

    static func lanczos(_ x: Double, _ a: Double) -> Double {
        if x == 0 { return 1 }
        guard abs(x) < a else { return 0 }
        let pix = Double.pi * x
        return a * sin(pix) * sin(pix / a) / (pix * pix)
    }

    /// Mixes or splits channels: mono to stereo duplicates, more to fewer averages.
    public static func remix(_ audio: AudioFrame, to channels: Int) -> AudioFrame {
        guard audio.channels != channels, audio.channels > 0 else { return audio }
        let frames = audio.frameCount
        var output = [Int16](repeating: 0, count: frames * channels)
        for frame in 0..<frames {
            let base = frame * audio.channels
            if audio.channels == 1 {
                for channel in 0..<channels { output[frame * channels + channel] = audio.samples[base] }
            } else if channels == 1 {
                var sum = 0
                for channel in 0..<audio.channels { sum += Int(audio.samples[base + channel]) }
                output[frame] = Int16(sum / audio.channels)
            } else {
                // Keep the first `channels` channels (front left and right in WAV order).
                for channel in 0..<channels { output[frame * channels + channel] = audio.samples[base + channel] }
            }
        }
        return AudioFrame(samples: output, channels: channels, sampleRate: audio.sampleRate)
    }
}
