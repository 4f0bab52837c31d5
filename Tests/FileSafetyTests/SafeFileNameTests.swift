import Foundation
import Testing

@testable import FileSafety

@Suite struct SafeFileNameTests {
    @Test(arguments: [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("/etc/shadow", "shadow"),
        ("..\\..\\windows\\system.ini", "system.ini"),
        ("a/b/", "b"),
        ("", "received-file"),
        (".", "received-file"),
        ("..", "received-file"),
        ("/", "received-file"),
        (".bashrc", "bashrc"),
        ("...hidden", "hidden"),
        ("bell\u{07}and\nnewline\r.txt", "bellandnewline.txt"),
        ("tab\there", "tabhere"),
        ("nul\u{0}byte", "nulbyte"),
        ("del\u{7F}c1\u{85}", "delc1"),
        ("evil\u{202E}txt.exe", "eviltxt.exe"),
        ("  spaced  ", "spaced"),
        ("trailing.", "trailing"),
        ("ünïcödé ✓.txt", "ünïcödé ✓.txt"),
    ])
    func sanitises(_ input: String, _ expected: String) {
        #expect(SafeFileName.make(input) == expected)
    }

    @Test func longNamesAreCutAtACharacterBoundary() {
        let name = String(repeating: "é", count: 300)
        let safe = SafeFileName.make(name)
        #expect(safe.utf8.count <= SafeFileName.maxBytes)
        #expect(safe == String(repeating: "é", count: SafeFileName.maxBytes / 2))
    }

    @Test func theResultIsAlwaysOneUsablePathComponent() {
        for input in ["../", "./.", "a/../..", "\u{1}\u{2}", "/..//../", "x/\u{0}"] {
            let safe = SafeFileName.make(input)
            #expect(!safe.isEmpty && !safe.contains("/") && safe != "." && safe != "..")
            #expect(!safe.unicodeScalars.contains { $0.value < 0x20 })
        }
    }
}

@Suite struct FilePlacementTests {
    @Test func placesUnderAFreeNameWithoutReplacingAnything() throws {
        let directory = NSTemporaryDirectory() + "placement-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("old".utf8).write(to: URL(fileURLWithPath: directory + "/a.txt"))
        try Data("old1".utf8).write(to: URL(fileURLWithPath: directory + "/a (1).txt"))
        let temporary = directory + "/.incoming"
        try Data("new".utf8).write(to: URL(fileURLWithPath: temporary))
        let path = try FilePlacement.place(temporary, in: directory, as: "a.txt")
        #expect(path == directory + "/a (2).txt")
        #expect(FileManager.default.contents(atPath: path) == Data("new".utf8))
        #expect(FileManager.default.contents(atPath: directory + "/a.txt") == Data("old".utf8))
        #expect(!FileManager.default.fileExists(atPath: temporary))
    }

    @Test func numbering() {
        #expect(FilePlacement.numbered("a.tar.gz", 0) == "a.tar.gz")
        #expect(FilePlacement.numbered("a.tar.gz", 3) == "a.tar (3).gz")
        #expect(FilePlacement.numbered("README", 1) == "README (1)")
    }

    @Test func aMissingDirectoryIsAClearError() {
        #expect(throws: FilePlacement.Failure.self) {
            try FilePlacement.place("/nonexistent/x", in: "/nonexistent-dir", as: "x")
        }
    }
}
