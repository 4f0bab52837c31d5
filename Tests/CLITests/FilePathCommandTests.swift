import Foundation
import TestSupport
import Testing

/// `send-file` between two `carrier` processes on both paths: a direct
/// session when the friend's node takes files that way, toxcore when it does
/// not (refusals on either path: FileTransferTests, with real nodes in one process).
@Suite(.timeLimit(.minutes(5))) struct FilePathCommandTests {
    @Test func filesGoDirectlyAndFallBackToToxcore() async throws {
        let root = temporaryDirectory("paths")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let network = try await LocalNetwork()
        defer { network.node.interrupt() }
        let common = network.common
        let local = ["--host-ip", "127.0.0.1"]
        let bob = try await LocalNetwork.identity(root + "/bob")
        func listen(_ options: [String]) throws -> CarrierProcess {
            try CarrierProcess(["listen", "--accept-friends", "--json", "--data", root + "/bob"] + options + common)
        }
        var listener = try listen(["--receive-dir", root + "/inbox"] + local)
        let (added, _, addError) = try await CarrierProcess.run(
            ["friend", "add", bob.address, "--wait", "90", "--data", root + "/alice"] + common, timeout: .seconds(120))
        #expect(added == 0, "friend add failed: \(addError.suffix(500))")
        // Alice's sends run in her daemon: one node, joined once.
        let daemon = try CarrierProcess(["daemon", "--json", "--data", root + "/alice"] + local + common)
        defer { daemon.interrupt() }
        #expect(await daemon.waitForLine(containing: "daemonReady", timeout: .seconds(30)) != nil)

        // 200 MB over a direct session, checked byte for byte at the other end.
        let big = root + "/big.bin"
        let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: big))
        for index in 0..<200 { try handle.write(contentsOf: block + Data([UInt8(index)])) }
        try handle.close()
        let (sent, sentLines, sentError) = try await CarrierProcess.run(
            ["send-file", bob.userId, big, "--json", "--data", root + "/alice"] + local, timeout: .seconds(180))
        #expect(sent == 0, "send-file failed: \(sentError.suffix(1000))")
        let result = try #require(json(sentLines.last))
        #expect(
            result["path"] as? String == "direct" && result["sha256Match"] as? Bool == true, "\(sentError.suffix(1500))"
        )
        let icePath = result["icePath"] as? [String: Any]
        #expect((icePath?["local"] as? [String: Any])?["type"] as? String == "host", "\(String(describing: icePath))")
        print("200 MB send-file over a direct session: \(result["MBps"] ?? "?") MB/s")
        let stored = json(await listener.waitForLine(containing: "\"completed\"", timeout: .seconds(10)))
        #expect(stored?["via"] as? String == "direct")
        #expect(FileManager.default.contentsEqual(atPath: big, andPath: root + "/inbox/big.bin"))

        // A node without the direct path (its sessions close the file channel): toxcore carries it.
        listener.interrupt()
        #expect(await listener.waitForExit(timeout: .seconds(10)) == 0)
        listener = try listen(["--receive-dir", root + "/inbox", "--sessions", "--toxcore-files"] + local)
        defer { listener.interrupt() }
        let small = root + "/small.bin"
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: URL(fileURLWithPath: small))
        let (fellBack, fallbackLines, fallbackError) = try await CarrierProcess.run(
            ["send-file", bob.userId, small, "--json", "--data", root + "/alice"] + local, timeout: .seconds(180))
        #expect(fellBack == 0, "send-file failed: \(fallbackError.suffix(1000))")
        #expect(json(fallbackLines.last)?["path"] as? String == "toxcore")
        #expect(fallbackError.contains("sending over toxcore"))
        let storedToo = json(await listener.waitForLine(containing: "\"completed\"", timeout: .seconds(10)))
        #expect(storedToo?["via"] as? String == "toxcore")
        #expect(FileManager.default.contentsEqual(atPath: small, andPath: root + "/inbox/small.bin"))
    }
}
