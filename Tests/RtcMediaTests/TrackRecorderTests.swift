import Foundation
import RtcCodecs
import RtcMediaFiles
import TestSupport
import Testing

@testable import RtcMedia

/// Each recorder on its own, writing real files: what opens a file, what is
/// written first, and what is ignored.
@Suite struct TrackRecorderTests {
    let directory = temporaryDirectory("track-recorders")

    @Test func wavStartsWithTheLeadSilenceThenTheAudio() throws {
        let recorder = WavRecorder(path: directory + "/a.wav")
        #expect(recorder.path == nil)  // nothing came: no file
        try recorder.audioStarts(leadSeconds: 0.5)
        try recorder.pcm([Int16](repeating: 1000, count: 960 * 2))
        try recorder.close()
        let wav = try WavFile(path: try #require(recorder.path))
        #expect(wav.audio.samples.count == (24_000 + 960) * 2)
        #expect(wav.audio.samples.prefix(48_000).allSatisfy { $0 == 0 } && wav.audio.samples.last == 1000)
        // A lead past 30 s is a wrong clock, not silence to write.
        let far = WavRecorder(path: directory + "/b.wav")
        try far.audioStarts(leadSeconds: 45)
        try far.close()
        #expect(try WavFile(path: directory + "/b.wav").audio.samples.isEmpty)
    }

    @Test func ivfStartsAtTheFirstKeyframeWithItsSize() throws {
        let encoder = try Vp8VideoEncoder(.init(width: 176, height: 144, framesPerSecond: 30, bitrate: 300_000))
        let frames = try (0..<3).flatMap { try encoder.encode(.grey(width: 176, height: 144), keyframe: $0 == 1) }
        let recorder = IvfRecorder(path: directory + "/v.ivf")
        // A delta frame first (as if the keyframe was lost): skipped, no file yet.
        try recorder.vp8(frames[2].data, milliseconds: 0, keyframe: false)
        #expect(recorder.path == nil)
        try recorder.vp8(frames[1].data, milliseconds: 33, keyframe: true)
        try recorder.vp8(frames[2].data, milliseconds: 66, keyframe: false)
        try recorder.close()
        let ivf = try IvfFile(path: try #require(recorder.path))
        #expect(ivf.width == 176 && ivf.height == 144 && ivf.frames.count == 2)
    }

    @Test func y4mTakesItsRateFromTheFirstTwoPictures() throws {
        let recorder = Y4mRecorder(path: directory + "/v.y4m")
        let picture = VideoFrame.grey(width: 64, height: 48)
        try recorder.picture(picture, timestamp: UInt32.max - 1000)
        #expect(recorder.path == nil)
        try recorder.picture(picture, timestamp: (UInt32.max - 1000) &+ 6000)  // 15 fps, across the wrap
        try recorder.picture(picture, timestamp: (UInt32.max - 1000) &+ 12_000)
        try recorder.close()
        let y4m = try Y4mFile(path: try #require(recorder.path))
        #expect(y4m.framesPerSecond == 15 && y4m.frameCount == 3)
        // One picture only: written at 30 fps when the track ends.
        let single = Y4mRecorder(path: directory + "/one.y4m")
        try single.picture(picture, timestamp: 0)
        try single.close()
        let one = try Y4mFile(path: directory + "/one.y4m")
        #expect(one.framesPerSecond == 30 && one.frameCount == 1)
    }

    @Test func y4mKeepsItsFirstSizeWhenTheSenderShrinksItsPictures() throws {
        let recorder = Y4mRecorder(path: directory + "/sizes.y4m")
        try recorder.picture(.grey(width: 64, height: 48), timestamp: 0)
        try recorder.picture(.grey(width: 48, height: 36), timestamp: 3000)  // a sender a rung down
        try recorder.picture(.grey(width: 32, height: 24), timestamp: 6000)
        try recorder.picture(.grey(width: 64, height: 48), timestamp: 9000)
        try recorder.close()
        let y4m = try Y4mFile(path: directory + "/sizes.y4m")
        #expect(y4m.width == 64 && y4m.height == 48 && y4m.frameCount == 4)
        #expect(y4m.frames.allSatisfy { $0 == .grey(width: 64, height: 48) })
    }

    @Test func oggKeepsThePacketsAndIgnoresTheRest() throws {
        let recorder = OggRecorder(path: directory + "/a.opus")
        try recorder.pcm([1, 2])  // not its format
        try recorder.picture(.grey(width: 2, height: 2), timestamp: 0)
        #expect(recorder.path == nil)
        let encoder = try OpusAudioEncoder()
        for _ in 0..<5 { try recorder.opus(try encoder.encode([Int16](repeating: 0, count: 960 * 2))) }
        try recorder.close()
        #expect(try OggOpusFile(path: try #require(recorder.path)).packets.count == 5)
    }
}
