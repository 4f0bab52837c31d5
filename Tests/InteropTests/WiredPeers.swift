import Foundation
import TestSupport
import Testing

/// Two signaling peers run as processes, each one's signals piped to the
/// other by Tests/Interop/wire.py: this stack's `carrier rtc`, the aiortc
/// peer (Tests/Interop/aiortc_peer.py) or the Chromium peer (browser_peer.py).
enum WiredPeers {
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

    static func browser(_ arguments: [String]) -> [String] {
        ["python3", ChildProcess.interopScript("browser_peer.py")] + arguments
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

}
