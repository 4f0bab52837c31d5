import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `carrier rtc` fed what a hostile peer could send on its signaling input.
@Suite struct HostileInputCommandTests {
    @Test func anOfferWithThousandsOfSectionsIsRefusedAtOnce() async throws {
        let process = try CarrierProcess(["rtc", "answer", "--timeout", "30"])
        let started = ContinuousClock.now
        process.writeLine(SyntheticSDP.offerSignal(sections: 2000))
        let code = await process.waitForExit(timeout: .seconds(20))
        #expect(code == 1)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(process.stderr.contains("more than 256 media sections"))
    }

    /// A line past the limit is read and dropped without being held, and the
    /// process goes on reading (here: to the end of its input).
    @Test func anOverlongSignalingLineIsDroppedWithoutHoldingIt() async throws {
        let process = try CarrierProcess(["rtc", "answer", "--timeout", "30"])
        let chunk = String(repeating: "x", count: 1 << 20)
        for _ in 0..<8 { process.write(chunk) }
        process.writeLine("")
        process.writeLine(#"{"type":"candidate","candidates":[{"sdp":"candidate:1 1 udp 1 127.0.0.1 9 typ host"}]}"#)
        process.closeInput()
        #expect(await process.waitForExit(timeout: .seconds(20)) != nil)
        #expect(process.stderr.contains("a line of more than 8388608 bytes (at most 1048576), dropped"))
        #expect(process.stderr.contains("candidates before any description: held"))
    }

    /// `--log-level info` shows what the library drops; the default (warning) does not.
    @Test func theLogLevelShowsDroppedCandidates() async throws {
        let sdp = SyntheticSDP.offer(sections: 1) + "a=candidate:1 1 udp 2122260223 device.invalid 9 typ host\r\n"
        let line = String(
            decoding: try JSONSerialization.data(withJSONObject: ["type": "offer", "sdp": sdp]), as: UTF8.self)
        for (level, shown) in [("info", true), ("warning", false)] {
            let process = try CarrierProcess(["rtc", "answer", "--timeout", "10", "--log-level", level])
            process.writeLine(line)
            process.closeInput()
            #expect(await process.waitForExit(timeout: .seconds(20)) != nil)
            let said = process.stderr.contains("info peer: remote candidate dropped: reserved .invalid host name")
            #expect(said == shown, "--log-level \(level): \(process.stderr.suffix(400))")
        }
    }

    /// A process that may hold keys is not dumpable: no core file, and its
    /// /proc files (memory, environment) belong to root, not to its user.
    /// Seen from another user's process (needs root to become one, and a
    /// binary others may run).
    @Test func aCarrierProcessIsNotDumpable() async throws {
        let binary = ChildProcess.carrierExecutable.path
        guard getuid() == 0 else { return }
        let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups"]
        let probe = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/setpriv"), arguments: asNobody + ["test", "-x", binary])
        guard await probe.waitForExit(timeout: .seconds(10)) == 0 else { return }  // a private build tree
        let process = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/setpriv"),
            arguments: asNobody + [binary, "rtc", "answer", "--timeout", "30"])
        defer { process.interrupt() }
        // setpriv execs carrier in place: the pid is carrier's once it runs.
        // From exec to the first line of main the process is dumpable: wait for the change.
        let pid = process.pid
        let hidden = await eventually(within: .seconds(20)) {
            var info = stat()
            let command = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
            return command.hasPrefix("carrier") && stat("/proc/\(pid)/environ", &info) == 0 && info.st_uid == 0
        }
        #expect(hidden, "/proc/PID/environ of carrier run as nobody still belongs to nobody")
    }

    /// Not before its time, and not held up by anything: on a loaded machine
    /// (the whole CLI suite at once on two cores) a debug build's start alone
    /// took up to 4 s, so the upper bound is loose; a process that ignored
    /// the timeout would run into the 30 s wait.
    @Test func theTimeoutEndsTheProcessOnTime() async throws {
        let process = try CarrierProcess(["rtc", "answer", "--timeout", "2"])
        let started = ContinuousClock.now
        #expect(await process.waitForExit(timeout: .seconds(30)) == 1)
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .seconds(2) && elapsed < .seconds(15))
        #expect(process.stderr.contains("timed out after 2"))
    }
}
