import Foundation
import TestSupport
import Testing

/// Interop with aiortc 1.16 (slow suite: real processes, 50 MB transfers).
/// Both stacks gather on 127.0.0.1 only; signaling goes over their stdin/stdout.
@Suite(.serialized, .timeLimit(.minutes(5))) struct AiortcFileTests {
    static func randomFile(_ directory: String, megabytes: Int) throws -> String {
        let path = directory + "/payload.bin"
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        defer { try? random.close() }
        try random.read(upToCount: megabytes << 20)?.write(to: URL(fileURLWithPath: path))
        return path
    }

    static func aiortc(_ arguments: [String]) -> [String] {
        ["python3", ChildProcess.aiortcPeer, "--loopback"] + arguments
    }

    static func carrier(_ arguments: [String]) -> [String] { [ChildProcess.carrierExecutable.path] + arguments }

    /// Runs both peers wired by Tests/Interop/wire.py; returns their exit statuses.
    static func run(_ first: [String], _ second: [String], logs: String) async throws -> (Int32?, Int32?) {
        let encode = { (command: [String]) in String(decoding: try JSONEncoder().encode(command), as: UTF8.self) }
        let wire = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            arguments: [
                "WIRE_LOG_PREFIX=\(logs)", "python3", ChildProcess.wireScript, "150", try encode(first),
                try encode(second),
            ])
        _ = await wire.waitForExit(timeout: .seconds(170))
        let result = json(wire.lines.last)
        let statuses = ((result?["first"] as? Int).map(Int32.init), (result?["second"] as? Int).map(Int32.init))
        if statuses != (0, 0) {
            let ours = (try? String(contentsOfFile: logs + ".first.err", encoding: .utf8)) ?? ""
            let theirs = (try? String(contentsOfFile: logs + ".second.err", encoding: .utf8)) ?? ""
            print("first stderr:\n\(ours.suffix(2000))\nsecond stderr:\n\(theirs.suffix(2000))")
        }
        return statuses
    }

    static func summary(_ path: String) -> [String: Any]? {
        json(try? String(contentsOfFile: path, encoding: .utf8))
    }

    static func sameBytes(_ a: String, _ b: String) -> Bool {
        FileManager.default.contentsEqual(atPath: a, andPath: b)
    }

    @Test func carrierOffersAndSendsFiftyMegabytesToAiortc() async throws {
        let root = temporaryDirectory("aio-send")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try Self.randomFile(root, megabytes: 50)
        let (status, theirStatus) = try await Self.run(
            Self.carrier([
                "rtc", "offer", "--host-ip", "127.0.0.1", "--send-file", file, "--stats", root + "/ours.json",
            ]),
            Self.aiortc(["answer", "--receive-dir", root + "/in", "--stats", root + "/theirs.json"]),
            logs: root + "/log")
        #expect(status == 0 && theirStatus == 0)
        let summary = try #require(Self.summary(root + "/ours.json"))
        #expect(summary["transferOk"] as? Bool == true && summary["bytes"] as? Int == 50 << 20)
        #expect(Self.summary(root + "/theirs.json")?["ok"] as? Bool == true)
        #expect(Self.sameBytes(file, root + "/in/payload.bin"))
        print("carrier → aiortc: \(summary["MBps"] ?? "?") MB/s, setup \(summary["setupMs"] ?? "?") ms")  // for the notes
    }

    @Test func aiortcOffersAndSendsFiftyMegabytesToCarrier() async throws {
        let root = temporaryDirectory("aio-receive")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try Self.randomFile(root, megabytes: 50)
        let (status, theirStatus) = try await Self.run(
            Self.carrier([
                "rtc", "answer", "--host-ip", "127.0.0.1", "--receive-dir", root + "/in", "--stats",
                root + "/ours.json",
            ]),
            Self.aiortc(["offer", "--send-file", file, "--stats", root + "/theirs.json"]), logs: root + "/log")
        #expect(status == 0 && theirStatus == 0)
        #expect(Self.summary(root + "/ours.json")?["transferOk"] as? Bool == true)
        #expect(Self.summary(root + "/theirs.json")?["ok"] as? Bool == true)
        #expect(Self.sameBytes(file, root + "/in/payload.bin"))
    }

    /// aiortc echoes everything: our file comes back to us, and our own
    /// receiver's acknowledgement (echoed too) completes the send.
    @Test func echoThroughAiortcReturnsTheSameBytes() async throws {
        let root = temporaryDirectory("aio-echo")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try Self.randomFile(root, megabytes: 2)
        let (status, _) = try await Self.run(
            Self.carrier([
                "rtc", "offer", "--host-ip", "127.0.0.1", "--send-file", file, "--receive-dir", root + "/back",
                "--stats",
                root + "/ours.json",
            ]), Self.aiortc(["answer", "--echo"]), logs: root + "/log")
        #expect(status == 0)
        #expect(Self.sameBytes(file, root + "/back/payload.bin"))
    }

    @Test func nonTrickleOfferWorksWithAiortc() async throws {
        let root = temporaryDirectory("aio-notrickle")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = try Self.randomFile(root, megabytes: 1)
        let (status, _) = try await Self.run(
            Self.carrier([
                "rtc", "offer", "--no-trickle", "--host-ip", "127.0.0.1", "--send-file", file, "--stats",
                root + "/ours.json",
            ]),
            Self.aiortc(["answer", "--receive-dir", root + "/in"]), logs: root + "/log")
        #expect(status == 0)
        // The offer carried every candidate and end-of-candidates, and no candidate signal followed it.
        let signals = try String(contentsOfFile: root + "/log.first.out", encoding: .utf8).split(separator: "\n")
        let offer = try #require(signals.first { $0.contains("\"offer\"") })
        #expect(offer.contains("a=candidate:") && offer.contains("a=end-of-candidates"))
        #expect(!signals.contains { $0.contains("\"candidate\"") })
        #expect(Self.sameBytes(file, root + "/in/payload.bin"))
    }
}
