import Foundation
import RtcCodecs
import RtcMediaFiles

/// Checks on decoded media that tests share: tone detection, durations, PSNR.
public enum MediaChecks {
    /// The project's test media (media/).
    public static func mediaFile(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("media").appendingPathComponent(name).path
    }

    /// Relative power of `frequency` in one channel (Goertzel), 0...1 of the channel's energy:
    /// close to 1 for a pure tone at that frequency, close to 0 when it is absent.
    public static func tonePower(_ audio: AudioFrame, channel: Int, frequency: Double, skipSeconds: Double = 0.2)
        -> Double
    {
        let start = Int(skipSeconds * Double(audio.sampleRate))
        let count = min(audio.frameCount - start, audio.sampleRate)  // one second is plenty
        guard count > 0 else { return 0 }
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

    /// Seconds of audio.
    public static func seconds(_ audio: AudioFrame) -> Double { Double(audio.frameCount) / Double(audio.sampleRate) }

    /// The mean luma PSNR of received pictures against their best-matching
    /// source pictures near the same position (frames may be dropped or repeated).
    public static func meanPsnr(received: [VideoFrame], source: [VideoFrame], window: Int = 3) -> Double {
        guard !received.isEmpty, !source.isEmpty else { return 0 }
        var total = 0.0
        var sourceIndex = 0
        for picture in received {
            var best = -Double.infinity
            var bestIndex = sourceIndex
            for candidate in max(0, sourceIndex - window)...min(source.count - 1, sourceIndex + window) {
                let psnr = min(picture.lumaPsnr(against: source[candidate]) ?? 0, 99)
                if psnr > best {
                    best = psnr
                    bestIndex = candidate
                }
            }
            total += best
            sourceIndex = min(bestIndex + 1, source.count - 1)
        }
        return total / Double(received.count)
    }

    /// Runs ffprobe on a file: its format's duration in seconds, nil if ffprobe cannot read it.
    public static func ffprobeDuration(_ path: String) -> Double? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        process.arguments = ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        while process.isRunning { usleep(2000) }  // readDataToEndOfFile returned: exit is imminent
        guard process.terminationStatus == 0 else { return nil }
        return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
