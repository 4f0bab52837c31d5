import Foundation
import TestSupport
import Testing

/// An answering bot (`carrier listen --answer`) takes 30 calls one after
/// another, some with files, some stopped by Ctrl-C on the caller, one whose
/// caller is killed mid-call, and ends with the threads, descriptors and heap
/// it had after ten (scripts/soak_calls.py; `make soak` runs 200). Slow: about
/// a minute and a half of calls.
@Suite(.timeLimit(.minutes(6))) struct AnsweringBotSoakTests {
    @Test func thirtyCallsLeaveTheBotAsItWas() async throws {
        let script = ChildProcess.repositoryRoot.appendingPathComponent("scripts/soak_calls.py").path
        let soak = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            arguments: ["CALLS=30", "LIMIT_KB=1024", "python3", script, ChildProcess.carrierExecutable.path])
        soak.closeInput()
        let status = await soak.waitForExit(timeout: .seconds(330))
        let report = soak.lines.joined(separator: "\n")
        #expect(status == 0, "\(report)\n\(soak.stderr.suffix(3000))")
        #expect(report.contains("threads") && report.contains("ok"))
        print(report)  // the figures, for the notes
    }
}
