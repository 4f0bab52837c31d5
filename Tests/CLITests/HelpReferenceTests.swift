import Foundation
import TestSupport
import Testing

/// `--help` and docs/cli.md say the same: every command `carrier --help`
/// lists, and every option a command's own `--help` names, is in the reference.
@Suite struct HelpReferenceTests {
    static var reference: String {
        get throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            return try String(contentsOf: root.appendingPathComponent("docs/cli.md"), encoding: .utf8)
        }
    }

    /// The command names under "Commands:" in `carrier --help`.
    static func commands() async throws -> [String] {
        let (status, lines, _) = try await CarrierProcess.run(["--help"])
        #expect(status == 0)
        guard let start = lines.firstIndex(of: "Commands:") else { return [] }
        return lines[(start + 1)...].prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    @Test func everyCommandAndEveryOptionIsInTheCliReference() async throws {
        let reference = try Self.reference
        let commands = try await Self.commands()
        #expect(commands.count >= 17 && commands.contains("session") && commands.contains("forward"))
        for command in commands {
            #expect(reference.contains("`\(command)") || reference.contains("carrier \(command)"), "\(command)")
            let (status, lines, _) = try await CarrierProcess.run([command, "--help"])
            #expect(status == 0, "\(command) --help")
            let options = Set(
                lines.joined(separator: "\n").matches(of: /--[a-z][a-z-]+/).map { String($0.output) })
            #expect(options.contains("--data"), "\(command) --help names no options")  // the global ones at least
            let missing = options.filter { !reference.contains($0) }.sorted()
            #expect(missing.isEmpty, "docs/cli.md lacks \(command)'s \(missing)")
        }
    }
}
