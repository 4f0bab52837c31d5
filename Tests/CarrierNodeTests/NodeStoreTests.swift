import Foundation
import Testing

@testable import CarrierNode

@Suite struct NodeStoreTests {
    func temporaryDirectory() -> String {
        NSTemporaryDirectory() + "/carrier-store-\(UUID().uuidString)"
    }

    @Test func savesAtomicallyWithPrivateModeAndLoadsBack() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = NodeStore(directory: directory)
        #expect(try store.load() == nil)
        let contents = NodeStore.Contents(
            toxSavedata: [1, 2, 3, 4], extra: .init(labels: ["abc": "Alice"], awaitingAcceptance: ["def"]))
        try store.save(contents)
        #expect(try store.load() == contents)
        let attributes = try FileManager.default.attributesOfItem(atPath: store.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: store.path + ".tmp"))
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
    }

    @Test func refusesCorruptOrForeignFilesWithAClearError() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = NodeStore(directory: directory)
        try store.save(.init(toxSavedata: [9, 9, 9], extra: .init()))
        var bytes = try #require(FileManager.default.contents(atPath: store.path))
        bytes[NodeStore.headerSize] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: store.path))
        #expect(throws: CarrierError.self) { try store.load() }
        try Data("hello".utf8).write(to: URL(fileURLWithPath: store.path))
        #expect(throws: CarrierError.self) { try store.load() }
        try Data(bytes.prefix(60)).write(to: URL(fileURLWithPath: store.path))
        #expect(throws: CarrierError.self) { try store.load() }
    }

    /// A link where the temporary file goes (left by someone who could write
    /// there) is not written through: its target stays as it was.
    @Test func aLinkInPlaceOfTheTemporaryFileIsNotFollowed() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = NodeStore(directory: directory)
        try store.save(.init(toxSavedata: [1], extra: .init()))
        let victim = directory + "/victim"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: store.path + ".tmp", withDestinationPath: victim)
        try store.save(.init(toxSavedata: [2], extra: .init()))
        #expect(try store.load()?.toxSavedata == [2])
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
    }

    /// Whoever can write into the data directory can swap its files: such a directory is refused.
    @Test func aDataDirectoryOthersMayWriteIsRefused() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        #expect(chmod(directory, 0o777) == 0)
        let store = NodeStore(directory: directory)
        #expect {
            try store.lock()
        } throws: { error in
            "\(error)".contains("may be written by other users (mode 777): chmod 700 it")
        }
        #expect(chmod(directory, 0o755) == 0)
        NodeStore.unlock(try store.lock())
    }

    /// A child forked by another thread keeps a copy of the lock's descriptor until
    /// it execs; releasing the lock must not wait for that copy to close.
    @Test func unlockReleasesTheDirectoryWhileACopyOfTheDescriptorLives() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = NodeStore(directory: directory)
        let fd = try store.lock()
        let childsCopy = dup(fd)
        defer { close(childsCopy) }
        #expect(throws: CarrierError.self) { try store.lock() }
        NodeStore.unlock(fd)
        let again = try store.lock()
        NodeStore.unlock(again)
    }
}
