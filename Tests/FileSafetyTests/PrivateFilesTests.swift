import Foundation
import Testing

@testable import FileSafety

/// Files and folders made for what peers send: new, private, never through a link.
@Suite struct PrivateFilesTests {
    private func temporaryPath(_ name: String) -> String {
        NSTemporaryDirectory() + "/private-files-\(name)-\(UInt32.random(in: 0...UInt32.max))"
    }

    private func mode(_ path: String) -> Int? {
        try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    }

    @Test func aNewFileIsPrivateAndAnExistingOneIsKept() throws {
        let path = temporaryPath("file")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let descriptor = try PrivateFiles.create(path).get()
        close(descriptor)
        #expect(mode(path) == 0o600)

        try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
        let again = PrivateFiles.create(path)
        #expect(again == .failure(PrivateFiles.Failure(path: path, code: EEXIST)))
        #expect(String(describing: try #require(again.failure)).contains("exists already"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
    }

    /// Bytes written whole into a new private file; an existing file is kept as it was.
    @Test func bytesGoWholeIntoANewFileOnly() throws {
        let path = temporaryPath("whole")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(throws: Never.self) { try PrivateFiles.write(bytes, to: path).get() }
        #expect(FileManager.default.contents(atPath: path).map(Array.init) == bytes)
        #expect(mode(path) == 0o600)
        #expect(throws: PrivateFiles.Failure(path: path, code: EEXIST)) { try PrivateFiles.write([1], to: path).get() }
        #expect(FileManager.default.contents(atPath: path).map(Array.init) == bytes)
    }

    /// A link where a file would go (to a file the user can write) is refused, and its target untouched.
    @Test func aSymbolicLinkIsRefusedAndItsTargetUntouched() throws {
        let target = temporaryPath("target")
        let link = temporaryPath("link")
        defer {
            try? FileManager.default.removeItem(atPath: target)
            try? FileManager.default.removeItem(atPath: link)
        }
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: target))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(PrivateFiles.create(link) == .failure(PrivateFiles.Failure(path: link, code: ELOOP)))
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep me")
        // A dangling link is refused too (O_CREAT would otherwise create its target).
        try FileManager.default.removeItem(atPath: target)
        #expect(PrivateFiles.create(link) == .failure(PrivateFiles.Failure(path: link, code: ELOOP)))
        #expect(!FileManager.default.fileExists(atPath: target))
    }

    @Test func foldersAreMadePrivateWithTheirParentsAndLinksRefused() throws {
        let root = temporaryPath("folder")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let deep = root + "/a/b/"
        try PrivateFiles.makeDirectory(deep).get()
        #expect(mode(root) == 0o700 && mode(root + "/a") == 0o700 && mode(root + "/a/b") == 0o700)
        try PrivateFiles.makeDirectory(deep).get()  // there already: fine
        try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: root + "/a")
        #expect(PrivateFiles.makeDirectory(root + "/link").failure == .init(path: root + "/link", code: ELOOP))
        #expect(
            PrivateFiles.parentOf("/x") == "/" && PrivateFiles.parentOf("x") == ""
                && PrivateFiles.parentOf("a/b//") == "a")
    }

    /// Temporary folders have names nobody can guess (and so make first, as a link).
    @Test func temporaryFoldersAreUnpredictableAndPrivate() throws {
        let first = try #require(PrivateFiles.makeTemporaryDirectory(prefix: "carrier-test"))
        let second = try #require(PrivateFiles.makeTemporaryDirectory(prefix: "carrier-test"))
        defer {
            try? FileManager.default.removeItem(atPath: first)
            try? FileManager.default.removeItem(atPath: second)
        }
        #expect(first != second && !first.contains("\(getpid())"))
        #expect(mode(first) == 0o700)
    }

    @Test func theSpaceGuardKeepsTheReserve() throws {
        #expect(FreeSpace.bytes(at: NSTemporaryDirectory() + "/not/made/yet") != nil)
        // 10 MiB free, 8 kept: 2 MiB may be written, the disk asked again after each MiB.
        let disk = Disk(free: 10 << 20)
        var space = FreeSpace.Guard(directory: "/x", reserve: 8 << 20, recheckEvery: 1 << 20) { _ in disk.ask() }
        for size in [1 << 20, 1 << 19, 1 << 19] {
            #expect(space.refusal(adding: size) == nil)
            disk.write(size)
        }
        #expect(space.refusal(adding: 1)?.contains("less than 8 MiB free") == true)
        #expect(disk.asked == 3)
    }
}

/// A file system that loses what is written to it, and counts the questions.
private final class Disk: @unchecked Sendable {
    private let lock = NSLock()
    private var free: UInt64
    private var questions = 0
    init(free: UInt64) { self.free = free }
    func ask() -> UInt64 {
        lock.withLock {
            questions += 1
            return free
        }
    }
    func write(_ count: Int) { lock.withLock { free -= UInt64(count) } }
    var asked: Int { lock.withLock { questions } }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let failure) = self { failure } else { nil }
    }
}
