import Foundation
import TestSupport
import Testing

/// `--record FILE.webm`: one file with both tracks, which plays even when
/// the recording process is killed mid-call.
@Suite(.serialized) struct RecordCommandTests {
    /// ffprobe's view of a file: codec names of its streams, and video frames it decodes.
    static func probe(_ path: String) async throws -> (codecs: [String], videoFrames: Int) {
        let streams = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/ffprobe"),
            arguments: ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", path])
        streams.closeInput()
        _ = await streams.waitForExit(timeout: .seconds(30))
        let frames = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/ffprobe"),
            arguments: [
                "-v", "error", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames", "-of",
                "csv=p=0", path,
            ])
        frames.closeInput()
        _ = await frames.waitForExit(timeout: .seconds(30))
        try await Task.sleep(for: .milliseconds(100))  // let the pipe handlers drain what was written before exit
        return (streams.lines.filter { !$0.isEmpty }, Int(frames.lines.first ?? "") ?? 0)
    }

    @Test func aWebmRecordingKilledMidCallStillPlays() async throws {
        let root = temporaryDirectory("record-kill")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let webm = root + "/call.webm"
        let run = try RtcFaultTests.Run(
            offer: [
                "--audio", MediaChecks.mediaFile("tone.opus"), "--video", MediaChecks.mediaFile("testsrc.ivf"),
                "--loop",
                "--duration", "30",
            ],
            answer: ["--record", webm])
        // Three live stats lines: about three seconds of media recorded.
        let flowing = await eventually(within: .seconds(20)) {
            run.answerer.stderr.components(separatedBy: "stats: ").count > 3
        }
        #expect(flowing, "no media: \(run.answerer.stderr.suffix(800))")
        kill(run.answerer.process.processIdentifier, SIGKILL)
        _ = await run.answerer.waitForExit(timeout: .seconds(5))
        run.offerer.interrupt()
        _ = await run.finish(timeout: .seconds(10))
        let (codecs, frames) = try await Self.probe(webm)
        #expect(codecs == ["opus", "vp8"], "streams: \(codecs)")
        // Cut off without its trailer, it still plays up to its last cluster (about 2 s at 30 fps here).
        #expect(frames >= 30, "\(frames) video frames decoded from the killed recording")
        print("killed recording: \(frames) video frames")  // for the notes
    }
}
