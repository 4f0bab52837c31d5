import CarrierNode
import CarrierWire
import ExpressServer
import Foundation
import TestSupport
import Testing

/// Our Express node serves Carrier's own API (wire notes §5.2) beside `/v1`:
/// requests built as the reference client builds them (`CarrierExpress`,
/// checked byte for byte against its requests in CarrierWireTests) are
/// stored, handed back as records it reads, and deleted; a body or an
/// `until` not sealed by its user is refused.
@Suite struct CarrierExpressApiTests {
    /// A Carrier user: `TestUser`'s keys, and an address.
    struct User {
        let user = TestUser()
        var secretKey: [UInt8] { user.secretKey }
        var id: UserId { user.id }
        var address: CarrierAddress { CarrierAddress(userId: id, nospam: 0x1122_3344) }

        init() throws {}

        func nodeKey(_ service: ExpressService) -> [UInt8] {
            CarrierExpress.sharedKey(secretKey: secretKey, publicKey: service.publicKey) ?? []
        }
    }

    static func request(_ method: String, _ path: String, body: [UInt8] = [], until: String? = nil) -> HttpRequest {
        var request = HttpRequest(method: method, path: path, headers: [:], body: body, peerAddress: "127.0.0.1")
        if let until { request.query["until"] = until }
        return request
    }

    @Test(arguments: StoreKind.allCases) func depositPullAndDeleteAsACarrierClientDoes(_ kind: StoreKind) async throws {
        let store = try await TestStore(kind)
        let service = try ExpressService(configuration: store.configuration())
        let alice = try User()
        let bob = try User()
        #expect(service.handle(Self.request("HEAD", "/version")).status == 200)

        // Alice's offline friend request to Bob's address, and an offline message to Bob.
        let request = CarrierPacket.friendRequest(.init(name: "Alice", hello: "hi, offline")).encode()
        let deposited = service.handle(
            Self.request(
                "PUT", "/\(bob.address)/\(alice.id)", body: CarrierExpress.box(request, key: alice.nodeKey(service))))
        #expect(deposited.status == 201)
        let friendKey = try #require(CarrierExpress.sharedKey(secretKey: alice.secretKey, publicKey: bob.id.publicKey))
        let message = CarrierPacket.message(ext: nil, data: Array("hello-offline".utf8)).encode()
        let sealed = CarrierExpress.box(CarrierExpress.box(message, key: friendKey), key: alice.nodeKey(service))
        #expect(service.handle(Self.request("POST", "/\(bob.id)/\(alice.id)", body: sealed)).status == 201)

        // What a Carrier client could not have sent: a body Bob sealed in Alice's
        // name, and a "request" that is not a friendreq.
        let forged = CarrierExpress.box(message, key: bob.nodeKey(service))
        #expect(service.handle(Self.request("PUT", "/\(bob.id)/\(alice.id)", body: forged)).status == 401)
        let notARequest = CarrierExpress.box(message, key: alice.nodeKey(service))
        #expect(service.handle(Self.request("PUT", "/\(bob.address)/\(alice.id)", body: notARequest)).status == 400)
        #expect(service.handle(Self.request("PUT", "/nobody/\(alice.id)", body: sealed)).status == 400)

        // Not through our API: each hands back only what came through it.
        let ours = service.handle(bob.user.request("GET", "/v1/messages/after/0", to: service))
        #expect(ours.status == 200 && ours.body.isEmpty)

        // Bob pulls: two records, readable with his key only.
        let pulled = service.handle(Self.request("GET", "/\(bob.id)"))
        #expect(pulled.status == 200)
        let boxes = try #require(CarrierExpress.records(pulled.body))
        let messages = boxes.compactMap { CarrierExpress.open($0, key: bob.nodeKey(service)) }
            .compactMap(CarrierPullMessage.decode)
        #expect(messages.count == 2)
        #expect(boxes.allSatisfy { CarrierExpress.open($0, key: alice.nodeKey(service)) == nil })
        let requestRecord = try #require(messages.first { $0.kind == .friendRequest })
        #expect(requestRecord.from == alice.id.description && requestRecord.address == bob.address.description)
        #expect(requestRecord.payload == request)
        let messageRecord = try #require(messages.first { $0.kind == .message })
        #expect(CarrierExpress.open(messageRecord.payload, key: friendKey) == message)
        #expect(messageRecord.timestamp >= requestRecord.timestamp)

        // An until Alice sealed does not delete Bob's mail; Bob's does.
        let last = messages.map(\.timestamp).max() ?? 0
        let wrong = CarrierExpress.until(last, nodeKey: alice.nodeKey(service))
        #expect(service.handle(Self.request("DELETE", "/\(bob.id)", until: wrong)).status == 401)
        #expect(service.handle(Self.request("DELETE", "/\(bob.id)")).status == 401)
        let until = CarrierExpress.until(last, nodeKey: bob.nodeKey(service))
        #expect(service.handle(Self.request("DELETE", "/\(bob.id)", until: until)).status == 205)
        let after = service.handle(Self.request("GET", "/\(bob.id)"))
        #expect(after.status == 200 && after.body.isEmpty)
        await store.stop()
    }

    /// Carrier's client speaks HTTPS only, and sends its "POST" as a chunked
    /// PUT after `Expect: 100-continue` (`express.json`); curl does the same here.
    @Test func aChunkedPutOverHttpsIsStored() async throws {
        let root = temporaryDirectory("carrier-express-tls")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let pem = try await SelfSignedCertificate.make(in: root)
        let tls = HttpServer.Tls(certificate: pem.certificate, key: pem.key)
        let endpoint = try ExpressEndpoint(configuration: ExpressService.Configuration(), tls: tls)
        defer { endpoint.stop() }
        let alice = try User()
        let bob = try User()
        let request = CarrierPacket.friendRequest(.init(name: "Alice", hello: "over https")).encode()
        let body = CarrierExpress.box(request, key: alice.nodeKey(endpoint.service))
        try Data(body).write(to: URL(fileURLWithPath: root + "/body"))
        let base = "https://127.0.0.1:\(endpoint.server.port)"
        let put = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/curl"),
            arguments: [
                "-sk", "-o", "/dev/null", "-w", "%{http_code}\n", "-X", "PUT", "-H", "Transfer-Encoding: chunked",
                "-H", "Expect: 100-continue", "-H", "Content-Type: application/binary", "--data-binary",
                "@" + root + "/body", "\(base)/\(bob.address)/\(alice.id)",
            ])
        #expect(await put.waitForExit(timeout: .seconds(30)) == 0)
        #expect(put.lines.joined() == "201", "\(put.lines) \(put.stderr)")
        let get = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/curl"),
            arguments: ["-sk", "-o", root + "/pulled", "\(base)/\(bob.id)"])
        #expect(await get.waitForExit(timeout: .seconds(30)) == 0)
        let pulled = try #require(FileManager.default.contents(atPath: root + "/pulled"))
        let boxes = try #require(CarrierExpress.records(Array(pulled)))
        let messages = boxes.compactMap { CarrierExpress.open($0, key: bob.nodeKey(endpoint.service)) }
            .compactMap(CarrierPullMessage.decode)
        #expect(messages.map(\.payload) == [request])
        // Plain HTTP to an HTTPS node gets nothing.
        let plain = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/curl"),
            arguments: [
                "-s", "-o", "/dev/null", "-w", "%{http_code}\n", "http://127.0.0.1:\(endpoint.server.port)/version",
            ])
        _ = await plain.waitForExit(timeout: .seconds(30))
        #expect(plain.lines.joined() != "200")
    }
}
