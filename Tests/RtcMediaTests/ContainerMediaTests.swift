import Foundation
import RtcCodecs
import RtcMedia
import RtcMediaFiles
import TestSupport
import Testing

/// Files as people have them, through libavformat: made here by ffmpeg,
/// streamed through a real peer connection, recorded and checked.
@Suite(.serialized) struct ContainerMediaTests {
    /// Runs ffmpeg (quiet, overwriting); whether it succeeded.
    static func ffmpeg(_ arguments: [String]) async throws -> Bool {
        let process = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/ffmpeg"),
            arguments: ["-hide_banner", "-loglevel", "error", "-y"] + arguments)
        process.closeInput()
        return await process.waitForExit(timeout: .seconds(60)) == 0
    }

    /// testsrc 320x240 at 15 fps and two tones (440 Hz left, 660 Hz right), 4 s.
    static let testInputs = [
        "-f", "lavfi", "-i", "testsrc=size=320x240:rate=15", "-f", "lavfi", "-i",
        "sine=frequency=440:sample_rate=44100",
        "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=44100", "-filter_complex", "[1:a][2:a]amerge=inputs=2[a]",
        "-map", "0:v", "-map", "[a]", "-t", "4",
    ]

    /// `root/source.mp4` (H.264 + AAC of `testInputs`) and `root/source.y4m`, the same pictures uncompressed.
    static func makeMp4(in root: String) async throws -> String {
        let mp4 = root + "/source.mp4"
        #expect(
            try await Self.ffmpeg(
                Self.testInputs + ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "18", "-c:a", "aac", mp4]))
        #expect(
            try await Self.ffmpeg([
                "-f", "lavfi", "-i", "testsrc=size=320x240:rate=15", "-t", "4", "-pix_fmt", "yuv420p",
                root + "/source.y4m",
            ]))
        return mp4
    }

    /// An MP4 with H.264 video and AAC stereo tones: decoded, encoded to VP8
    /// and Opus, sent, recorded; the tones are there and the pictures match
    /// the source (PSNR at least 30 dB).
    @Test func anMp4WithH264AndAacIsStreamedAndMatchesItsSource() async throws {
        let root = temporaryDirectory("mp4-source")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let mp4 = try await Self.makeMp4(in: root)
        #expect(try MediaSources.tracks(in: mp4) == [.audio, .video])
        let result = try await MediaCallTests.call(audio: mp4, video: mp4, seconds: 3)
        defer { try? FileManager.default.removeItem(atPath: result.directory) }
        try MediaCallTests.checkAudio(result.directory, seconds: 3, tolerance: 0.15)
        let (frames, psnr) = try MediaCallTests.videoPsnr(result.directory, source: root + "/source.y4m")
        #expect(abs(Double(frames) - 45) <= 3, "\(frames) frames for 3 s at 15 fps")
        #expect(psnr >= 30, "PSNR \(psnr) dB")
        print("mp4 (h264+aac): \(frames) frames, PSNR \(String(format: "%.1f", psnr)) dB")  // for the notes
    }

    /// What arrives from an MP4 (H.264 + AAC) is recorded into one WebM: two
    /// tracks ffprobe reads, Opus and VP8 as received, the tones there, and
    /// pictures that match the source (PSNR at least 30 dB).
    @Test func aCallIsRecordedIntoOneWebmWithBothTracks() async throws {
        let root = temporaryDirectory("webm-record")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let mp4 = try await Self.makeMp4(in: root)
        let webm = root + "/call.webm"
        let result = try await MediaCallTests.call(audio: mp4, video: mp4, seconds: 3, webm: webm)
        defer { try? FileManager.default.removeItem(atPath: result.directory) }
        #expect(MediaChecks.ffprobeDuration(webm).map { abs($0 - 3) < 0.3 } == true)
        // Its tracks, decoded by ffmpeg (not by us).
        #expect(try await Self.ffmpeg(["-i", webm, "-map", "0:a", root + "/audio.wav"]))
        #expect(try await Self.ffmpeg(["-i", webm, "-map", "0:v", "-pix_fmt", "yuv420p", root + "/video.y4m"]))
        let audio = try WavFile(path: root + "/audio.wav").audio
        #expect(MediaChecks.tonePower(audio, channel: 0, frequency: 440, skipSeconds: 0.5) > 0.7)
        #expect(MediaChecks.tonePower(audio, channel: 1, frequency: 660, skipSeconds: 0.5) > 0.7)
        let pictures = try Y4mFile(path: root + "/video.y4m").frames
        let source = try Y4mFile(path: root + "/source.y4m").frames
        let psnr = MediaChecks.meanPsnr(received: pictures, source: source)
        #expect(pictures.count >= 40 && psnr >= 30, "\(pictures.count) pictures, PSNR \(psnr) dB")
        print("webm recording: \(pictures.count) pictures, PSNR \(String(format: "%.1f", psnr)) dB")  // for the notes
    }

    /// A WebM with VP8 and Opus goes out without decoding: the frames and
    /// packets recorded are byte for byte those of the file.
    @Test func aWebmWithVp8AndOpusPassesThroughByteForByte() async throws {
        let root = temporaryDirectory("webm-source")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let webm = root + "/source.webm"
        let ivf = MediaChecks.mediaFile("testsrc.ivf")
        let opus = MediaChecks.mediaFile("tone.opus")
        #expect(try await Self.ffmpeg(["-i", ivf, "-i", opus, "-map", "0:v", "-map", "1:a", "-c", "copy", webm]))
        let result = try await MediaCallTests.call(audio: webm, video: webm, seconds: 2)
        defer { try? FileManager.default.removeItem(atPath: result.directory) }
        let sourceFrames = try IvfFile(path: ivf).frames.map(\.data)
        let recorded = try IvfFile(path: result.directory + "/video.ivf").frames.map(\.data)
        #expect(recorded.count >= 25)
        #expect(Array(recorded.prefix(20)) == Array(sourceFrames.prefix(20)))
        let packets = try OggOpusFile(path: result.directory + "/audio.opus").packets
        let original = try OggOpusFile(path: opus).packets
        #expect(packets.count >= 50)
        #expect(Array(packets.prefix(40)) == Array(original.prefix(40)))
        #expect(result.sent.allSatisfy { $0.framesEncoded == 0 })  // nothing decoded or encoded
    }

    /// A looped clip that is encoded here starts with a keyframe and then goes
    /// on with delta frames through every rewind (a keyframe at each loop of
    /// a 2 s clip froze a slow link's picture every 2 s).
    @Test func aLoopedClipIsOneStreamWithOneKeyframe() throws {
        let source = try MediaSources.open(MediaChecks.mediaFile("testsrc.y4m"), kind: .video)
        var keyframes: [Int] = []
        var frames = 0
        for _ in 0..<3 {
            while let sample = try source.next() {
                if sample.isKeyframe { keyframes.append(frames) }
                frames += 1
            }
            source.rewind()
        }
        #expect(frames == 90)  // three times the clip's 30 pictures
        #expect(keyframes == [0])
        source.requestKeyframe()  // a peer's request still makes one
        #expect(try source.next()?.isKeyframe == true)
    }

    /// --start skips into the file; a file without the track asked for says what it has.
    @Test func startSkipsAndAMissingTrackIsAClearError() async throws {
        let root = temporaryDirectory("container-errors")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let mp3 = root + "/tone.mp3"
        #expect(
            try await Self.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-c:a", "libmp3lame", mp3]))
        #expect(throws: MediaFileError.self) { _ = try MediaSources.open(mp3, kind: .video) }
        do {
            _ = try MediaSources.open(mp3, kind: .video)
        } catch {
            #expect("\(error)".contains("no video track; it has audio (mp3)"))
        }
        var whole = 0
        let full = try MediaSources.open(mp3, kind: .audio)
        while try full.next() != nil { whole += 1 }
        var skipped = 0
        let late = try MediaSources.open(mp3, kind: .audio, start: 2)
        while try late.next() != nil { skipped += 1 }
        // Looping: a rewind goes back to --start, times from zero again.
        late.rewind()
        #expect(try late.next()?.time == 0)
        var again = 1
        while try late.next() != nil { again += 1 }
        #expect(again == skipped)
        // 3 s is 150 Opus frames of 20 ms; from 2 s on, about 50.
        #expect(abs(whole - 150) <= 3 && abs(skipped - 50) <= 3, "\(whole) and \(skipped) frames")
        let notMedia = root + "/notes.txt"
        try Data("not a media file".utf8).write(to: URL(fileURLWithPath: notMedia))
        #expect(throws: MediaFileError.self) { _ = try MediaSources.open(notMedia) }
    }
}
