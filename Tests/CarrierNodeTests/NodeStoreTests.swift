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
