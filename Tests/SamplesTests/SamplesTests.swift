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
}
