import Foundation
import Testing

/// A clone of the repository alone must build and pass: nothing the tests,
/// samples, scripts or sources read may live outside it (such as the
/// developers' shared folder beside the clone, which a clone does not have).
@Suite struct SelfContainedTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func fixturesAreResourcesOfTheTestTarget() throws {
        let url = try #require(
            Bundle.module.url(forResource: "identity-signatures", withExtension: "json", subdirectory: "Fixtures"))
        #expect(url.path.hasPrefix(Self.packageRoot.path) || url.path.contains(".build"))
        #expect(try Data(contentsOf: url).count > 100)
    }

    @Test func noFileReachesOutsideTheRepository() throws {
        let folders = ["Sources", "Tests", "samples", "scripts", "media", ".ci"]
        let files = ["Makefile", "Package.swift"]
        var offenders: [String] = []
        let needle = "../" + "shared"  // split so this file does not match itself
        var paths = files.map { Self.packageRoot.appendingPathComponent($0).path }
        for folder in folders {
            let base = Self.packageRoot.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(atPath: base.path) else { continue }
            for case let relative as String in walker { paths.append(base.appendingPathComponent(relative).path) }
        }
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                let size = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int, size < 1 << 20,
                let data = FileManager.default.contents(atPath: path)
            else { continue }
            if String(decoding: data, as: UTF8.self).contains(needle) { offenders.append(path) }
        }
        #expect(offenders.isEmpty, "files that read outside the repository: \(offenders)")
    }
}
