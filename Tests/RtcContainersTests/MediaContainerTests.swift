import Foundation
import RtcCodecs
import RtcContainers
import RtcMediaFiles
import TestSupport
import Testing

/// libavformat, libavcodec, libswresample and libswscale behind
/// `MediaContainer` and `TrackDecoder`, on the project's test media.
@Suite struct MediaContainerTests {
    @Test func aWavIsDecodedAndResampledTo48kHzKeepingItsTones() throws {
        let container = try MediaContainer(path: MediaChecks.mediaFile("tone-440-660.wav"))
        let track = try container.track(.audio)
        #expect(track.channels == 2 && track.sampleRate == 44100 && container.video == nil)
        let decoder = try TrackDecoder(container, track: track)
        var samples: [Int16] = []
        var packet = container.nextPacket(of: track)
        while true {
            for case .audio(let audio) in try decoder.decode(packet) { samples += audio.samples }
            if packet == nil { break }
            packet = container.nextPacket(of: track)
        }
        let audio = AudioFrame(samples: samples, channels: 2, sampleRate: 48000)
        #expect(abs(MediaChecks.seconds(audio) - 5) < 0.01, "\(MediaChecks.seconds(audio)) s")
        #expect(MediaChecks.tonePower(audio, channel: 0, frequency: 440) > 0.9)
        #expect(MediaChecks.tonePower(audio, channel: 1, frequency: 660) > 0.9)
    }

    @Test func aY4mIsDecodedToTheSamePictures() throws {
        let path = MediaChecks.mediaFile("testsrc.y4m")
        let container = try MediaContainer(path: path)
        let track = try container.track(.video)
        #expect(track.width == 320 && track.height == 240 && track.framesPerSecond == 15)
        let decoder = try TrackDecoder(container, track: track)
        var pictures: [VideoFrame] = []
        var times: [Double] = []
        var packet = container.nextPacket(of: track)
        while true {
            for case .video(let picture, let time) in try decoder.decode(packet) {
                pictures.append(picture)
                times.append(time)
            }
            if packet == nil { break }
            packet = container.nextPacket(of: track)
        }
        let source = try Y4mFile(path: path).frames
        #expect(pictures.count == source.count)
        #expect(zip(pictures, source).allSatisfy { $0.data == $1.data })
        #expect(abs((times.last ?? 0) - Double(source.count - 1) / 15) < 0.001)
    }

    @Test func whatIsNotMediaIsAClearError() throws {
        let root = temporaryDirectory("containers")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let text = root + "/notes.txt"
        try Data("plain words, no media here".utf8).write(to: URL(fileURLWithPath: text))
        #expect(throws: MediaFileError.self) { _ = try MediaContainer(path: text) }
        #expect(throws: MediaFileError.cannotOpen(root + "/missing.mp4")) {
            _ = try MediaContainer(path: root + "/missing.mp4")
        }
        let wav = try MediaContainer(path: MediaChecks.mediaFile("tone-440-660.wav"))
        #expect(throws: MediaFileError.self) { _ = try wav.track(.video) }
    }
}
