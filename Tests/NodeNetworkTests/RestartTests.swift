import Foundation
import TestSupport
import Testing

@testable import CarrierNode

@Suite(.timeLimit(.minutes(5))) struct RestartTests {
    /// A node stopped and started again from its data directory keeps its
    /// identity and friends, and its friend reaches it again.
    @Test func restartKeepsIdentityAndFriendList() async throws {
        let net = try await TestNetwork.shared()
        let dave = try TestNetwork.peer("dave", root: net.root, entry: net.entry)
        try await dave.start()
        #expect(await dave.waitUntilReady(timeout: .seconds(60)))
        try await TestNetwork.befriend(dave, net.alice)
        try await dave.setLabel("A", for: net.alice.userId)
        let address = await dave.address()
        let oldPort = try #require(await dave.udpPort())
        await dave.stop()
        await #expect(throws: CarrierError.notRunning) {
            try await dave.sendMessage([1], to: net.alice.userId.description)
        }

        // A fresh port: toxcore peers are slow to find a node back on its old one.
        let fresh = oldPort < 40000 ? UInt16(41000)...UInt16(41999) : UInt16(34600)...UInt16(34999)
        let again = try TestNetwork.peer("dave", root: net.root, entry: net.entry, ports: fresh)
        #expect(again.userId == dave.userId)
        #expect(await again.address() == address)
        #expect(await again.friendList().map(\.userId) == [net.alice.userId])
        #expect(await again.friendInfo(net.alice.userId)?.label == "A")
        try await again.start()
        #expect(await again.waitUntilConnected(to: net.alice.userId, timeout: .seconds(90)))
        #expect(try await again.deliverMessage(Array("back".utf8), to: net.alice.userId.description) == .delivered)
        await again.stop()
    }

    @Test func importedSecretKeyGivesTheSameIdentity() async throws {
        let root = NSTemporaryDirectory() + "carrier-import-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let original = try Carrier(options: CarrierOptions(dataDirectory: root + "/a"))
        let key = await original.exportSecretKey()
        await original.stop()
        var options = CarrierOptions(dataDirectory: root + "/b")
        options.secretKey = key
        let imported = try Carrier(options: options)
        #expect(imported.userId == original.userId)
        await imported.stop()
        // The same key again into the same directory is fine; another key is refused.
        let again = try Carrier(options: options)
        await again.stop()
        options.secretKey = [UInt8](repeating: 7, count: 32)
        #expect(throws: CarrierError.self) { try Carrier(options: options) }
    }
}

@Suite struct DataDirectoryLockTests {
    @Test func oneDataDirectoryServesOneNodeAtATime() async throws {
        let directory = NSTemporaryDirectory() + "carrier-lock-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try Carrier(options: CarrierOptions(dataDirectory: directory))
        #expect {
            try Carrier(options: CarrierOptions(dataDirectory: directory))
        } throws: { error in
            "\(error)".contains("in use by another carrier process (pid \(getpid()))")
        }
        await first.stop()
        let second = try Carrier(options: CarrierOptions(dataDirectory: directory))
        #expect(second.userId == first.userId)
        await second.stop()
    }
}
