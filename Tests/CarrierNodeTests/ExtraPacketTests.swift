import CarrierWire
import Testing

@testable import CarrierNode

/// Our packets beyond Carrier's, and the user info we put in Carrier's.
@Suite struct ExtraPacketTests {
    @Test func everyPacketRoundTrips() throws {
        let packets: [ExtraPacket] = [
            .hello(features: .ours),
            .hello(features: ExtraPacket.Features(rawValue: 0xFFFF_0000)),
            .fileResult(sha256: [UInt8](repeating: 3, count: 32), status: 2, reason: "the SHA-256 differs"),
            .dhtNode(key: [UInt8](repeating: 7, count: 32), port: 33445),
        ]
        for packet in packets {
            #expect(try ExtraPacket.decode(packet.encode()) == packet)
        }
    }

    @Test func knownBytesOfAHello() {
        // type 40, then features (tag 70, four bytes, big-endian): bits 0-2.
        #expect(ExtraPacket.hello(features: .ours).encode() == [40, 70, 0, 4, 0, 0, 0, 7])
    }

    @Test func malformedInputIsATypedError() {
        #expect(throws: PacketError.empty) { try ExtraPacket.decode([]) }
        // A Carrier packet type is not one of ours: it never comes this way.
        #expect(throws: PacketError.unknownType(33)) { try ExtraPacket.decode([33]) }
        #expect(throws: PacketError.truncated) { try ExtraPacket.decode([40, 70, 0]) }
        #expect(throws: PacketError.truncated) { try ExtraPacket.decode([40, 70, 0, 9, 1]) }
        #expect(throws: PacketError.missingField(70)) { try ExtraPacket.decode([40]) }
        #expect(throws: PacketError.badField(70)) { try ExtraPacket.decode([40, 70, 0, 2, 0, 1]) }
        #expect(throws: PacketError.duplicateField(70)) {
            try ExtraPacket.decode([40, 70, 0, 4, 0, 0, 0, 1, 70, 0, 4, 0, 0, 0, 1])
        }
        #expect(throws: PacketError.tooLarge(1373)) { try ExtraPacket.decode([UInt8](repeating: 40, count: 1373)) }
    }

    @Test func aDhtHintNeedsAWholeKeyAndAPort() {
        // type 39, key (tag 60) and port (tag 61, two bytes, big-endian).
        let key = [UInt8](repeating: 7, count: 32)
        #expect(
            ExtraPacket.dhtNode(key: key, port: 0x8235).encode() == [39, 60, 0, 32] + key + [61, 0, 2, 0x82, 0x35])
        #expect(throws: PacketError.badField(60)) {
            try ExtraPacket.decode([39, 60, 0, 31] + key.dropLast() + [61, 0, 2, 1, 1])
        }
        #expect(throws: PacketError.badField(61)) { try ExtraPacket.decode([39, 60, 0, 32] + key + [61, 0, 2, 0, 0]) }
        #expect(throws: PacketError.missingField(61)) { try ExtraPacket.decode([39, 60, 0, 32] + key) }
    }

    @Test func unknownFieldsAreSkipped() throws {
        let bytes: [UInt8] = [40, 99, 0, 2, 1, 1, 70, 0, 4, 0, 0, 0, 1]
        #expect(try ExtraPacket.decode(bytes) == .hello(features: .inviteResend))
    }

    /// Every field of our user info goes into Carrier's `userinfo` and back.
    @Test func userInfoTravelsAsCarriersPacket() throws {
        var info = UserInfo()
        info.name = "Bob"
        info.description = "a bot"
        info.hasAvatar = true
        info.region = "EU"
        info.client = .init(protoVersion: 2, platform: "linux", osVersion: "debian 12", appVersion: "0.1")
        info.profile = .init(avatarUrl: "https://example.com/a.png", url: "", ens: "bob.eth", extra: "{}")
        let bytes = info.carrierPacket.encode()
        #expect(UserInfo(statusMessage: bytes) == info)
        guard case .userInfo(let packet) = try CarrierPacket.decode(bytes) else {
            Issue.record("not a userinfo packet")
            return
        }
        #expect(packet.name == "Bob" && packet.platform == "linux" && packet.url == nil && packet.ens == "bob.eth")
        #expect(UserInfo(statusMessage: UserInfo().carrierPacket.encode()) == UserInfo())
        #expect(UserInfo(statusMessage: Array("just a status".utf8)) == nil)
    }

    /// A real Carrier peer's status message reads as its profile: the
    /// reference library's bytes (`userinfo` in CarrierWireTests' packets.json).
    @Test func aCarrierPeersUserInfoReads() throws {
        let hex =
            "0400000052ffffff030100000400000070ffffff800000005c0000004c000000380000001c0000000800000001000000"
            + "080000004c6f6f706261636b0000000011000000616c696365406578616d706c652e6f72670000000b0000002b312d"
            + "3535352d30313030000600000066656d616c6500001800000043617272696572207265666572656e636520766563746f"
            + "720000000005000000416c69636500000012001d001c000400080010000c00140018000a000c00040005000800"
        let digits = Array(hex.utf8)
        let bytes = stride(from: 0, to: digits.count, by: 2).compactMap {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)
        }
        let info = try #require(UserInfo(statusMessage: bytes))
        #expect(info.name == "Alice" && info.description == "Carrier reference vector" && info.hasAvatar)
        #expect(info.phone == "+1-555-0100" && info.gender == "female" && info.region == "Loopback")
        #expect(info.email == "alice@example.org" && info.client == UserInfo.ClientInfo())
    }

    @Test func userInfoLimitsAreEnforced() {
        var info = UserInfo()
        info.name = String(repeating: "n", count: 64)
        #expect(throws: CarrierError.self) { try info.validate() }
        info.name = "ok"
        #expect(throws: Never.self) { try info.validate() }
    }

    @Test func aPeersTrailingNulsAreNotPartOfItsText() {
        #expect(Carrier.withoutTrailingNuls("hi\0\0") == "hi")
        #expect(Carrier.withoutTrailingNuls("a\0b") == "a\0b")
        #expect(Carrier.withoutTrailingNuls("") == "")
    }
}
