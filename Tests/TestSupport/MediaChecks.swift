import Foundation
import RtcCodecs
import RtcMedia
import RtcMediaFiles

/// Checks on decoded media that tests share: tone detection, durations, PSNR.
public enum MediaChecks {
    /// The project's test media (media/).
    public static func mediaFile(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("media").appendingPathComponent(name).path
    }

    /// MediaAnalysis.tonePower, for tests that import only TestSupport.
    public static func tonePower(_ audio: AudioFrame, channel: Int, frequency: Double, skipSeconds: Double = 0.2)
        -> Double
    {
        MediaAnalysis.tonePower(audio, channel: channel, frequency: frequency, skipSeconds: skipSeconds)
    }

    /// Seconds of audio.
    public static func seconds(_ audio: AudioFrame) -> Double { Double(audio.frameCount) / Double(audio.sampleRate) }

    /// MediaAnalysis.meanPsnr (the source taken as looping), for tests that import only TestSupport.
    public static func meanPsnr(received: [VideoFrame], source: [VideoFrame], window: Int = 3) -> Double {
        MediaAnalysis.meanPsnr(received: received, source: source, window: window)
    }

    /// A Y4M of a moving test picture under heavy noise, hard to compress (a
    /// slow link cannot carry it at full size), made with ffmpeg in a temporary
    /// directory; the caller removes the file.
    public static func noisyVideo(width: Int, height: Int, framesPerSecond: Int, seconds: Double) throws -> String {
        let path = temporaryDirectory("noisy-video") + "/noisy.y4m"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = [
            "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=\(framesPerSecond)",
            "-vf", "noise=alls=25:allf=t+u", "-t", "\(seconds)", "-pix_fmt", "yuv420p", path,
        ]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: ["reason": "ffmpeg could not make \(path)"])
        }
        return path
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
