import Foundation
import TestSupport
import Testing

/// Every public declaration of the library modules has a doc comment (what
/// `make docs` turns into the API reference), so that it stays so.
@Suite struct DocCommentTests {
    /// The modules that are not API: the executable and the fuzz entry points.
    static let notAPI: Set<String> = ["CarrierCLI", "FuzzTargets"]

    @Test func everyPublicDeclarationHasADocComment() throws {
        let sources = ChildProcess.repositoryRoot.appendingPathComponent("Sources")
        let declaration = try Regex(
            #"^\s*public (private\(set\) )?((static|final|mutating|nonisolated|override|convenience|required) )*(func|var|let|init|struct|enum|class|actor|protocol|case|typealias|subscript)\b"#
        )
        var missing: [String] = []
        var checked = 0
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted()
        where !Self.notAPI.contains(module) {
            let directory = sources.appendingPathComponent(module)
            for file in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            where file.hasSuffix(".swift") {
                let lines = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                    .split(separator: "\n", omittingEmptySubsequences: false)
                for (index, line) in lines.enumerated() where line.firstMatch(of: declaration) != nil {
                    checked += 1
                    var previous = index - 1
                    while previous >= 0, lines[previous].trimmingCharacters(in: .whitespaces).hasPrefix("@") {
                        previous -= 1
                    }
                    if previous < 0 || !lines[previous].trimmingCharacters(in: .whitespaces).hasPrefix("///") {
                        missing.append("\(module)/\(file):\(index + 1): \(line.trimmingCharacters(in: .whitespaces))")
                    }
                }
            }
        }
        #expect(checked > 1000, "found only \(checked) public declarations: is the scan reading the sources?")
        #expect(missing.isEmpty, "public declarations without a doc comment:\n\(missing.joined(separator: "\n"))")
    }
}
