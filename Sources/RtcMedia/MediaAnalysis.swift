import Foundation
import RtcCodecs

/// Checks that a recording matches its source: tones found by the Goertzel
/// algorithm, pictures compared by PSNR. Used by the demo and the tests.
public enum MediaAnalysis {
    /// Share (0...1) of one channel's energy at `frequency`, over up to one
    /// second after `skipSeconds`: near 1 for a pure tone, near 0 when absent.
    public static func tonePower(_ audio: AudioFrame, channel: Int, frequency: Double, skipSeconds: Double = 0.2)
        -> Double
    {
        let start = Int(skipSeconds * Double(audio.sampleRate))
        let count = min(audio.frameCount - start, audio.sampleRate)
        guard count > 0, channel < audio.channels else { return 0 }
        let coefficient = 2 * cos(2 * Double.pi * frequency / Double(audio.sampleRate))
        var s1 = 0.0
        var s2 = 0.0
        var energy = 0.0
        for index in 0..<count {
            let x = Double(audio.samples[(start + index) * audio.channels + channel])
            energy += x * x
            let s0 = x + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        guard energy > 0 else { return 0 }
        return min(1, 2 * power / (Double(count) * energy))
    }

    /// Mean luma PSNR of received pictures against the best-matching source
    /// picture near the same position (frames may be dropped or repeated); the
    /// source is taken as looping.
    public static func meanPsnr(received: [VideoFrame], source: [VideoFrame], window: Int = 3) -> Double {
        guard !received.isEmpty, !source.isEmpty else { return 0 }
        var total = 0.0
        var position = 0
        for picture in received {
            var best = -Double.infinity
            var bestPosition = position
            for candidate in max(0, position - window)...(position + window) {
                let psnr = min(picture.lumaPsnr(against: source[candidate % source.count]) ?? 0, 99)
                if psnr > best {
                    best = psnr
                    bestPosition = candidate
                }
            }
            total += best
            position = bestPosition + 1
        }
        return total / Double(received.count)
    }
}
