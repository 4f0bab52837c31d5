import Foundation
import RtcCodecs
import RtcMediaFiles
import TestSupport
import Testing

@Suite struct MediaFileTests {
    @Test func theTestMediaRead() throws {
        let wav = try WavFile(path: MediaChecks.mediaFile("tone-440-660.wav")).audio
        #expect(wav.channels == 2 && wav.sampleRate == 44100)
        #expect(abs(MediaChecks.seconds(wav) - 5) < 0.01)
        #expect(MediaChecks.tonePower(wav, channel: 0, frequency: 440) > 0.9)
        #expect(MediaChecks.tonePower(wav, channel: 1, frequency: 660) > 0.9)

        let opus = try OggOpusFile(path: MediaChecks.mediaFile("tone.opus"))
        #expect(opus.channels == 2)
        let samples = opus.packets.compactMap(OpusAudioDecoder.frameSamples(of:)).reduce(0, +)
        #expect(abs(Double(samples) / 48000 - 5) < 0.05)

        let ivf = try IvfFile(path: MediaChecks.mediaFile("testsrc.ivf"))
        #expect(ivf.width == 320 && ivf.height == 240 && ivf.frames.count == 150)
        let y4m = try Y4mFile(path: MediaChecks.mediaFile("testsrc.y4m"))
        #expect(y4m.width == 320 && y4m.height == 240 && y4m.frames.count == 30 && y4m.framesPerSecond == 15)
    }

    /// Every writer leaves a file ffprobe reads, also when it is never closed
    /// (a recording cut short), and our readers read back what was written.
    @Test func writersLeaveValidFilesEvenWhenCutShort() throws {
        let directory = temporaryDirectory("media-files")
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let wav = try WavWriter(path: directory + "/a.wav", channels: 2, sampleRate: 48000)
        try wav.append([Int16](repeating: 1000, count: 48000 * 2))  // 1 s, not closed
        #expect(try WavFile(path: directory + "/a.wav").audio.frameCount == 48000)
        #expect(abs((MediaChecks.ffprobeDuration(directory + "/a.wav") ?? 0) - 1) < 0.01)
        wav.close()

        let encoder = try OpusAudioEncoder()
        let ogg = try OggOpusWriter(path: directory + "/a.opus", channels: 2)
        for _ in 0..<100 { try ogg.append(try encoder.encode([Int16](repeating: 0, count: 1920))) }
        ogg.close()
        #expect(try OggOpusFile(path: directory + "/a.opus").packets.count == 100)
        #expect(abs((MediaChecks.ffprobeDuration(directory + "/a.opus") ?? 0) - 2) < 0.05)

        let source = try IvfFile(path: MediaChecks.mediaFile("testsrc.ivf"))
        let ivf = try IvfWriter(path: directory + "/a.ivf", width: 320, height: 240)
        for (index, frame) in source.frames.prefix(30).enumerated() {
            try ivf.append(frame.data, milliseconds: UInt64(index * 33))
        }
        let back = try IvfFile(path: directory + "/a.ivf")  // not closed
        #expect(back.frames.count == 30 && back.frames[3].data == source.frames[3].data)
        #expect(MediaChecks.ffprobeDuration(directory + "/a.ivf") != nil)
        ivf.close()

        let y4m = try Y4mWriter(path: directory + "/a.y4m", width: 32, height: 16, framesPerSecond: 30)
        for _ in 0..<3 { try y4m.append(VideoFrame.grey(width: 32, height: 16)) }
        #expect(try Y4mFile(path: directory + "/a.y4m").frames.count == 3)
        #expect(MediaChecks.ffprobeDuration(directory + "/a.y4m") != nil)
        #expect(throws: MediaFileError.self) { try y4m.append(VideoFrame.grey(width: 16, height: 16)) }
        y4m.close()
    }

    @Test func badFilesAreClearErrors() throws {
        let directory = temporaryDirectory("media-bad")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let junk = directory + "/junk.bin"
        try Data("not media at all".utf8).write(to: URL(fileURLWithPath: junk))
        #expect(throws: MediaFileError.self) { try WavFile(path: junk) }
        #expect(throws: MediaFileError.self) { try OggOpusFile(path: junk) }
        #expect(throws: MediaFileError.self) { try IvfFile(path: junk) }
        #expect(throws: MediaFileError.self) { try Y4mFile(path: junk) }
        #expect(throws: MediaFileError.cannotOpen(directory + "/missing.wav")) {
            try WavFile(path: directory + "/missing.wav")
        }
    }
}
