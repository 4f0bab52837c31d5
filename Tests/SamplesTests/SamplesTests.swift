import Foundation
import TestSupport
import Testing

/// The samples run as a user runs them, so they cannot rot unnoticed.
@Suite(.timeLimit(.minutes(5))) struct SamplesTests {
    static func sample(_ name: String) -> URL {
        ChildProcess.carrierExecutable.deletingLastPathComponent().appendingPathComponent(name)
    }

    @Test func offlineAndFilesRunsToTheEnd() async throws {
        let process = try ChildProcess(executable: Self.sample("offline-and-files"), arguments: [])
        let code = await process.waitForExit(timeout: .seconds(240))
        #expect(code == 0, "offline-and-files: \(process.stderr.suffix(800))")
        let output = process.lines.joined(separator: "\n")
        #expect(output.contains("checked by Bob"))
        #expect(output.contains("Bob came back and got \"see you later\""))
        #expect(process.lines.last == "done")
    }

    @Test func dataChannelFileArrivesIntact() async throws {
        let root = temporaryDirectory("sample-dcf")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/sample.bin"
        try Data((0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 11) }).write(to: URL(fileURLWithPath: file))
        let process = try ChildProcess(executable: Self.sample("data-channel-file"), arguments: [file, root + "/in"])
        let code = await process.waitForExit(timeout: .seconds(60))
        #expect(code == 0, "data-channel-file: \(process.stderr.suffix(800))")
        #expect(process.lines.contains { $0.contains("the receiver's SHA-256 matches") })
        #expect(FileManager.default.contentsEqual(atPath: file, andPath: root + "/in/sample.bin"))
    }

    @Test func portForwardingReachesTheServiceAndSaysWhyNot() async throws {
        let process = try ChildProcess(executable: Self.sample("port-forwarding"), arguments: [])
        let code = await process.waitForExit(timeout: .seconds(60))
        #expect(code == 0, "port-forwarding: \(process.stderr.suffix(800))")
        let output = process.lines.joined(separator: "\n")
        #expect(
            output.contains("the greeter replied \"hello from Bob's greeter; you said: A QUIET HELLO\""), "\(output)")
        #expect(output.contains("mail was refused: no service \"mail\" here"), "\(output)")
    }

    @Test func callOverSocketPlaysAndRecords() async throws {
        let root = temporaryDirectory("sample-call")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let process = try ChildProcess(
            executable: Self.sample("call-over-socket"),
            arguments: [MediaChecks.mediaFile("tone.opus"), MediaChecks.mediaFile("testsrc.ivf"), root + "/rec"])
        let code = await process.waitForExit(timeout: .seconds(60))
        #expect(code == 0, "call-over-socket: \(process.stderr.suffix(800))")
        let output = process.lines.joined(separator: "\n")
        #expect(output.contains("alice: call connected") && output.contains("alice: call ended (hangUp)"))
        // Three seconds of 20 ms audio frames: about 150 packets.
        let audio = process.lines.first { $0.hasPrefix("bob received audio: ") }
        let packets = audio.flatMap { Int($0.split(separator: " ")[3]) } ?? 0
        #expect(packets > 100, "\(audio ?? "no audio line")")
        let recorded = (try? FileManager.default.contentsOfDirectory(atPath: root + "/rec")) ?? []
        #expect(recorded.contains("audio.wav") && recorded.contains("video.ivf"), "recorded \(recorded)")
    }

    @Test func liveMediaIsHeardAndSeen() async throws {
        let process = try ChildProcess(executable: Self.sample("live-media"), arguments: ["2"])
        let code = await process.waitForExit(timeout: .seconds(60))
        #expect(code == 0, "live-media: \(process.stderr.suffix(800))")
        let line = try #require(process.lines.first { $0.hasPrefix("bob heard audio at ") })
        let words = line.split(separator: " ")
        // "bob heard audio at -15.3 dBFS and saw 60 pictures (30.0 fps, 320x240); …"
        let level = Double(words[4]) ?? -120
        let pictures = Int(words[8]) ?? 0
        #expect(level > -20 && level < -10, "\(line)")
        #expect(pictures >= 50, "\(line)")
    }

    @Test func identitySignsVerifiesAndRestores() async throws {
        let process = try ChildProcess(executable: Self.sample("identity"), arguments: [])
        let code = await process.waitForExit(timeout: .seconds(60))
        #expect(code == 0, "identity: \(process.stderr.suffix(800))")
        #expect(process.lines.contains("verified with the user id alone: true"))
        #expect(process.lines.contains("the same signature over other words: false"))
        #expect(process.lines.contains("restored from the secret key: same user id true"))
    }

    /// A private network, a bot that befriends, replies and records calls (real toxcore nodes: about 15 s).
    @Test func friendsAndCallsRunsToTheEnd() async throws {
        let root = temporaryDirectory("sample-friends")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let process = try ChildProcess(executable: Self.sample("friends-and-calls"), arguments: [root + "/call.webm"])
        let code = await process.waitForExit(timeout: .seconds(180))
        #expect(code == 0, "friends-and-calls: \(process.stderr.suffix(800))")
        #expect(process.lines.contains("alice: message delivered: true"))
        #expect(process.lines.contains("alice: Bob replied \"you said: hello\""))
        #expect(process.lines.last == "done")
        #expect(MediaChecks.ffprobeDuration(root + "/call.webm").map { $0 > 2 } == true)
    }
}
