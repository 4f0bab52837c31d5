import Foundation
import Testing

@testable import CarrierWire

/// Carrier's Express API against the reference client's own requests and
/// the pull answer it accepted (`Fixtures/express.json`, fixed keys and nonces).
@Suite struct CarrierExpressTests {
    struct Vector {
        let root: [String: Any]
        let keys: [String: String]
        let requests: [[String: Any]]
        let nonces: [[UInt8]]

        init() throws {
            let url = try #require(
                Bundle.module.url(forResource: "express", withExtension: "json", subdirectory: "Fixtures"))
            root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
            keys = try #require(root["keys"] as? [String: String])
            requests = try #require(root["requests"] as? [[String: Any]])
            nonces = (root["nonces_drawn_in_order"] as? [String] ?? []).map(hex)
        }

        func key(_ name: String) -> [UInt8] { hex(keys[name]) }
        func request(_ index: Int, _ field: String) -> String? { requests[index][field] as? String }
        var pull: [String: Any] { root["pull_response"] as? [String: Any] ?? [:] }
        var plain: [String: String] { root["plain_packets"] as? [String: String] ?? [:] }
    }

    static func hex(_ text: String?) -> [UInt8] { CarrierTurnCredentialsTests.hex(text) }

    @Test func bothSidesShareTheNodesKey() throws {
        let vector = try Vector()
        let client = CarrierExpress.sharedKey(
            secretKey: vector.key("my_secret_key_hex"), publicKey: vector.key("express_node_public_key_hex"))
        let node = CarrierExpress.sharedKey(
            secretKey: vector.key("express_node_secret_key_hex"), publicKey: vector.key("my_public_key_hex"))
        #expect(client == vector.key("node_key_hex") && node == client)
        #expect(CarrierExpress.sharedKey(secretKey: [1], publicKey: vector.key("my_public_key_hex")) == nil)
    }

    /// The two deposits and the delete, byte for byte as the reference client sent them.
    @Test func depositsAndTheDeleteAreTheReferences() throws {
        let vector = try Vector()
        let nodeKey = vector.key("node_key_hex")
        let friendKey = vector.key("friend_key_hex")
        #expect(vector.nonces.count == 4)
        let request = CarrierExpress.box(
            Self.hex(vector.plain["friendreq_packet_hex"]), key: nodeKey, nonce: vector.nonces[0])
        #expect(request == Self.hex(vector.request(1, "body_hex")))
        #expect(vector.request(1, "request_line")?.hasPrefix("PUT /\(vector.keys["friend_address"] ?? "")/") == true)
        let inner = CarrierExpress.box(
            Self.hex(vector.plain["friendmsg_packet_hex"]), key: friendKey, nonce: vector.nonces[1])
        let message = CarrierExpress.box(inner, key: nodeKey, nonce: vector.nonces[2])
        #expect(message == Self.hex(vector.request(2, "body_hex")))
        let until = CarrierExpress.until(1_765_100_000_456, nodeKey: nodeKey, nonce: vector.nonces[3])
        #expect(until == vector.request(4, "until_base58"))
        // The node's side: what it opens.
        #expect(CarrierExpress.open(request, key: nodeKey) == Self.hex(vector.plain["friendreq_packet_hex"]))
        #expect(CarrierExpress.timestamp(until: until, nodeKey: nodeKey) == 1_765_100_000_456)
        #expect(CarrierExpress.timestamp(until: until, nodeKey: friendKey) == nil)
        #expect(CarrierExpress.timestamp(until: "0OIl", nodeKey: nodeKey) == nil)
    }

    /// The pull answer the reference client accepted reads to the same
    /// records; what we write, the same way, reads back.
    @Test func thePullAnswerReadsAsTheReferenceRead() throws {
        let vector = try Vector()
        let nodeKey = vector.key("node_key_hex")
        let body = Self.hex(vector.request(3, "response_body_hex"))
        let boxes = try #require(CarrierExpress.records(body))
        #expect(boxes.count == 2, "the empty record is skipped")
        let messages = boxes.compactMap { CarrierExpress.open($0, key: nodeKey).flatMap(CarrierPullMessage.decode) }
        #expect(messages.count == 2)
        #expect(messages.map(\.kind) == [.message, .friendRequest] && messages.map(\.id) == [1, 2])
        #expect(messages.map(\.timestamp) == [1_765_100_000_123, 1_765_100_000_456])
        #expect(messages.allSatisfy { $0.from == vector.keys["friend_userid"] })
        #expect(messages[0].address == nil && messages[1].address == vector.keys["my_address"])
        let inner = CarrierExpress.open(messages[0].payload, key: vector.key("friend_key_hex"))
        #expect(inner == Self.hex(vector.pull["record_M_inner_friendmsg_packet_hex"] as? String))
        #expect(messages[1].payload == Self.hex(vector.pull["record_R_inner_friendreq_packet_hex"] as? String))
        if case .message(nil, let data)? = inner.flatMap({ try? CarrierPacket.decode($0) }) {
            #expect(String(decoding: data, as: UTF8.self) == "hello-from-friend-offline")
        } else {
            Issue.record("the inner packet is not a friendmsg")
        }
        // Ours, written and read back.
        let ours = messages.map { CarrierExpress.record(CarrierExpress.box($0.encode(), key: nodeKey)) }
        let again = try #require(CarrierExpress.records(ours.flatMap { $0 }))
        #expect(
            again.compactMap { CarrierExpress.open($0, key: nodeKey).flatMap(CarrierPullMessage.decode) } == messages)
    }

    @Test func damagedAnswersAreRefused() throws {
        let vector = try Vector()
        let body = Self.hex(vector.request(3, "response_body_hex"))
        #expect(CarrierExpress.records(Array(body.dropLast())) == nil, "ends inside a record")
        var wrongMagic = body
        wrongMagic[0] ^= 1
        #expect(CarrierExpress.records(wrongMagic) == nil)
        #expect(
            CarrierExpress.records([0xCA, 0x6E, 0xE5, 0x95, 0x7F, 0xFF, 0xFF, 0xFF]) == nil, "a length past the bound")
        let boxes = try #require(CarrierExpress.records(body))
        var tampered = boxes[0]
        tampered[tampered.count - 1] ^= 1
        #expect(CarrierExpress.open(tampered, key: vector.key("node_key_hex")) == nil)
        #expect(CarrierPullMessage.decode([4, 0, 0, 0]) == nil)
    }
}
