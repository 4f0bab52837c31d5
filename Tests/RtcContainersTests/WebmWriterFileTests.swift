import Foundation
import RtcMediaFiles
import TestSupport
import Testing

@testable import RtcContainers

/// The WebM recording's file: new and private, never over what was there;
/// and what a media path may open.
@Suite struct WebmWriterFileTests {
    /// A path is a file: `concat:A|B` (libavformat's concat protocol) once
    /// opened both files; now it names a file that is not there. A URL the
    /// user names goes to libavformat as it is.
    @Test func aMediaPathOpensALocalFileOnly() throws {
        let tone = MediaChecks.mediaFile("tone-440-660.wav")
        #expect(try MediaContainer(path: tone).audio != nil)
        #expect(throws: MediaFileError.cannotOpen("concat:\(tone)|\(tone)")) {
            try MediaContainer(path: "concat:\(tone)|\(tone)")
        }
        #expect(throws: MediaFileError.self) { try MediaContainer(path: "subfile,,start,0,end,0,,:\(tone)") }
        #expect(MediaContainer.input("/x/y.mp4") == ("file:/x/y.mp4", true))
        #expect(MediaContainer.input("rtsp://cam.lab.test/stream") == ("rtsp://cam.lab.test/stream", false))
        #expect(MediaContainer.input("file:///x/y.mp4") == ("file:///x/y.mp4", true))
    }

    /// Opus packets from the test tone (its Ogg file), to record.
    static func opusPackets() throws -> [[UInt8]] {
        try OggOpusFile(path: MediaChecks.mediaFile("tone.opus")).packets
    }

    @Test func aRecordingIsANewPrivateFileThatPlays() throws {
        let directory = temporaryDirectory("webm-file")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/call.webm"
        let writer = try WebmWriter(path: path, audio: true, video: false)
        for (index, packet) in try Self.opusPackets().prefix(100).enumerated() {
            try writer.write(.audio, packet, milliseconds: Int64(index * 20))
        }
        writer.close()
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
        #expect(abs((MediaChecks.ffprobeDuration(path) ?? 0) - 2) < 0.1)
    }

    /// A file, or a link to one, where the recording would go is kept as it
    /// is, and the recording refused with words that say so.
    @Test func anExistingFileOrALinkIsNeverOverwritten() throws {
        let directory = temporaryDirectory("webm-existing")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let victim = directory + "/victim.txt"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: victim))
        #expect(
            throws: MediaFileError.writeFailed(
                "\(victim) exists already: it is kept; record somewhere else or move it away")
        ) {
            try WebmWriter(path: victim, audio: true, video: false)
        }
        let link = directory + "/call.webm"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: victim)
        #expect(throws: MediaFileError.writeFailed("\(link) is a symbolic link: refused")) {
            try WebmWriter(path: link, audio: true, video: false)
        }
        #expect(throws: MediaFileError.self) { try WavWriter(path: link, channels: 2, sampleRate: 48000) }
        #expect(throws: MediaFileError.self) { try IvfWriter(path: victim, width: 320, height: 240) }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
    }
}
