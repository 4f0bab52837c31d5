import CarrierWire
import Foundation
import Testing

@testable import CarrierNode

/// An identity moves between a Carrier app and this node through Carrier's
/// own `carrier.data` (wire notes §8.2): keys, friends, profile and labels.
@Suite struct CarrierDataInterchangeTests {
    @Test func anExportedIdentityComesBackWhole() async throws {
        let root = NSTemporaryDirectory() + "carrier-data-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let friendA = try Carrier(options: CarrierOptions())
        let friendB = try Carrier(options: CarrierOptions())
        let node = try Carrier(options: CarrierOptions(dataDirectory: root + "/one"))
        var info = UserInfo()
        info.name = "Bot"
        info.client.platform = "linux"
        try await node.setUserInfo(info)
        for friend in [friendA, friendB] {
            try await node.addFriend(address: await friend.address().description, hello: "hi")
        }
        try await node.setLabel("the second", for: friendB.userId)
        let bytes = await node.exportCarrierData()
        let file = try CarrierDataFile.decode(bytes)
        #expect(Array(bytes.prefix(4)) == [0x0E, 0x0C, 0x0D, 0x0A])
        #expect(file.labels == [.init(friendNumber: 1, text: "the second")])

        var options = CarrierOptions(dataDirectory: root + "/two")
        options.carrierData = file
        let copy = try Carrier(options: options)
        #expect(copy.userId == node.userId)
        #expect(await copy.address() == node.address())
        #expect(await copy.userInfo() == info)
        #expect(await copy.friendInfo(friendB.userId)?.label == "the second")
        #expect(await copy.friendInfo(friendA.userId)?.label == "")
        // Kept in the new data directory: it starts again without the file.
        await copy.stop()
        let again = try Carrier(options: CarrierOptions(dataDirectory: root + "/two"))
        let label = await again.friendInfo(friendB.userId)?.label
        #expect(again.userId == node.userId && label == "the second")
        await again.stop()

        // Never over an identity a data directory holds already.
        await node.stop()
        options.dataDirectory = root + "/one"
        #expect(throws: CarrierError.self) { try Carrier(options: options) }
        for friend in [friendA, friendB] { await friend.stop() }
    }
}
