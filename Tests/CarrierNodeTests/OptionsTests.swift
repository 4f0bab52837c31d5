import CarrierWire
import Foundation
import Testing

@testable import CarrierNode

@Suite struct OptionsTests {
    let key = [UInt8](repeating: 0xAB, count: 32)

    @Test func bootstrapEntryParsesBase58AndHexKeys() throws {
        let base58 = try BootstrapNode(parsing: "127.0.0.1:33445:" + Base58.encode(key))
        #expect(base58 == BootstrapNode(host: "127.0.0.1", port: 33445, publicKey: key))
        let hex = try BootstrapNode(parsing: "node.example:443:" + String(repeating: "ab", count: 32))
        #expect(hex.publicKey == key && hex.port == 443)
        #expect(try BootstrapNode(parsing: base58.description) == base58)
        for bad in [
            "127.0.0.1:33445", "127.0.0.1:0:" + Base58.encode(key), ":1:" + Base58.encode(key), "h:1:abc", "h:99999:x",
        ] {
            #expect(throws: CarrierError.self) { try BootstrapNode(parsing: bad) }
        }
    }

    @Test func configFileLoadsAndBadOnesSayWhy() throws {
        let path = NSTemporaryDirectory() + "carrier-config-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = """
            {"bootstrap":[{"host":"127.0.0.1","port":33445,"publicKey":"\(Base58.encode(key))"}],"udp":false,"loopbackOnly":true}
            """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let config = try NetworkConfig.load(path: path)
        #expect(config.bootstrap == [BootstrapNode(host: "127.0.0.1", port: 33445, publicKey: key)])
        #expect(config.udp == false && config.loopbackOnly == true)
        try #"{"bootstrap":[{"host":"h","port":1,"publicKey":"short"}]}"#.write(
            toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: CarrierError.self) { try NetworkConfig.load(path: path) }
        #expect(throws: CarrierError.self) { try NetworkConfig.load(path: path + ".missing") }
    }

    /// `iceServers` as the W3C RTCIceServer gives them: `urls` one string or a list.
    @Test func configFileIceServersTakeOneUrlOrAList() throws {
        let path = NSTemporaryDirectory() + "carrier-config-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try """
        {"bootstrap":[],"iceServers":[{"urls":"stun:stun.lab.test"},
          {"urls":["turn:turn.lab.test","turns:turn.lab.test:5349"],"username":"u","credential":"p"}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let servers = try #require(try NetworkConfig.load(path: path).iceServers)
        #expect(
            servers == [
                .init(urls: ["stun:stun.lab.test"]),
                .init(urls: ["turn:turn.lab.test", "turns:turn.lab.test:5349"], username: "u", credential: "p"),
            ])
        try #"{"bootstrap":[],"iceServers":[{"username":"u"}]}"#.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: CarrierError.self) { try NetworkConfig.load(path: path) }
    }

    @Test func nospamChangesTheAddressButNotTheUserId() async throws {
        let node = try Carrier(options: CarrierOptions())
        let before = await node.address()
        try await node.setNospam(0xDEAD_BEEF)
        let after = await node.address()
        let nospam = await node.nospam()
        #expect(after.nospam == 0xDEAD_BEEF && nospam == 0xDEAD_BEEF)
        #expect(after.userId == before.userId && after != before)
        #expect(CarrierAddress.isValid(after.description))
        await node.stop()
    }

    @Test func signaturesFromANodeVerifyWithItsUserId() async throws {
        let node = try Carrier(options: CarrierOptions())
        let message = Array("sign in with carrier".utf8)
        let signature = try await node.sign(message)
        #expect(Carrier.verify(message: message, signature: signature, userId: node.userId))
        await #expect(throws: CarrierError.self) { try await node.sign([]) }
        await node.stop()
    }
}
