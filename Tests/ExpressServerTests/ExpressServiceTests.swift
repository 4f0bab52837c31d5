import Foundation
import TestSupport
import Testing

@testable import CarrierNode
@testable import ExpressServer

/// A user for the tests: a key pair and its user id.
struct TestUser {
    let secretKey: [UInt8]
    let id: UserId

    init() {
        secretKey = (0..<32).map { _ in UInt8.random(in: 0...255) }
        id = UserId(publicKey: IdentitySignature.publicKey(secretKey: secretKey) ?? [])!
    }

    /// A request signed by this user (or claiming to be `claimed`).
    func request(
        _ method: String, _ path: String, body: [UInt8] = [], to service: ExpressService,
        claiming claimed: UserId? = nil,
        time: Int64 = Int64(Date().timeIntervalSince1970 * 1000), nonce: String = ExpressProtocol.newNonce()
    ) -> HttpRequest {
        var headers = ExpressProtocol.signedHeaders(
            serverKey: service.publicKey, method: method, path: path, body: body, userId: id, secretKey: secretKey,
            time: time, nonce: nonce)!
        if let claimed { headers[ExpressProtocol.Header.user] = claimed.description }
        // A message deposit shows our token for its recipient, as the node's client does.
        let parts = path.split(separator: "/").map(String.init)
        if method == "POST", parts.count == 4, parts[1] == "messages", let recipient = UserId(parts[2]),
            let token = ExpressContact.token(secretKey: secretKey, peer: recipient, serverKey: service.publicKey)
        {
            headers[ExpressProtocol.Header.contact] = Hex.encode(token)
        }
        return HttpRequest(
            method: method, path: path,
            headers: Dictionary(uniqueKeysWithValues: headers.map { ($0.key.lowercased(), $0.value) }), body: body)
    }

    func seal(_ text: String, to recipient: UserId, id: [UInt8] = randomId()) -> [UInt8] {
        SealedMessage(kind: .message, id: id, timestamp: 1_700_000_000_000, ext: nil, data: Array(text.utf8))
            .seal(to: recipient, senderSecretKey: secretKey)!
    }
}

func randomId() -> [UInt8] { (0..<16).map { _ in UInt8.random(in: 0...255) } }

/// Each user registers the others as its contacts on `service` (friends, as far as Express knows).
func befriend(_ users: [TestUser], on service: ExpressService) {
    for user in users {
        let friends = users.filter { $0.id != user.id }.map(\.id)
        let body = ExpressContact.registration(
            secretKey: user.secretKey, friends: friends, serverKey: service.publicKey)
        let answer = service.handle(user.request("PUT", "/v1/contacts", body: body, to: service))
        precondition(answer.status == 200, "registering contacts: \(answer.status) \(answer.text)")
    }
}

/// The Express service without sockets: requests in, signed answers out.
@Suite struct ExpressServiceTests {
    let alice = TestUser()
    let bob = TestUser()
    let carol = TestUser()

    func deposit(_ service: ExpressService, from sender: TestUser, to recipient: TestUser, _ text: String)
        -> HttpResponse
    {
        let path = "/v1/messages/\(recipient.id)/\(Hex.encode(randomId()))"
        return service.handle(sender.request("POST", path, body: sender.seal(text, to: recipient.id), to: service))
    }

    @Test(arguments: StoreKind.allCases) func depositPullOpenAndDelete(_ kind: StoreKind) async throws {
        let store = try await TestStore(kind)
        let clock = TestClock()
        let service = try ExpressService(configuration: store.configuration(), now: { clock.now })
        befriend([alice, bob, carol], on: service)
        #expect(deposit(service, from: alice, to: bob, "one").status == 201)
        #expect(deposit(service, from: carol, to: bob, "two").status == 201)
        let pulled = service.handle(bob.request("GET", "/v1/messages/after/0", to: service))
        #expect(pulled.status == 200 && pulled.headers[ExpressProtocol.Header.more] == "0")
        let records = try #require(ExpressProtocol.Record.decodeAll(pulled.body))
        #expect(records.map(\.sender) == [alice.id, carol.id])
        let opened = records.compactMap {
            SealedMessage.open($0.sealed, from: $0.sender, recipientSecretKey: bob.secretKey)
        }
        #expect(opened.map { String(decoding: $0.data, as: UTF8.self) } == ["one", "two"])
        // Sealed for Bob: nobody else opens it, and a lie about the sender fails too.
        #expect(SealedMessage.open(records[0].sealed, from: alice.id, recipientSecretKey: carol.secretKey) == nil)
        #expect(SealedMessage.open(records[0].sealed, from: carol.id, recipientSecretKey: bob.secretKey) == nil)

        let deleted = service.handle(bob.request("DELETE", "/v1/messages/through/\(records[0].seq)", to: service))
        #expect(deleted.status == 200 && deleted.text == #"{"deleted":1}"#)
        // The second record was pulled and not deleted: claimed for the lease,
        // then handed out again (the puller may have crashed).
        let claimed = service.handle(bob.request("GET", "/v1/messages/after/0", to: service))
        #expect(claimed.status == 200 && claimed.body.isEmpty)
        clock.advance(seconds: 31)
        let rest = service.handle(bob.request("GET", "/v1/messages/after/0", to: service, time: clock.milliseconds))
        #expect(ExpressProtocol.Record.decodeAll(rest.body)?.map(\.sender) == [carol.id])
        await store.stop()
    }

    @Test func everyAnswerIsSignedForTheRequestsNonce() throws {
        let service = try ExpressService(configuration: .init())
        befriend([alice, bob, carol], on: service)
        let nonce = ExpressProtocol.newNonce()
        let answer = service.handle(bob.request("GET", "/v1/messages/after/0", to: service, nonce: nonce))
        let signature = try #require(answer.headers[ExpressProtocol.Header.signature].flatMap(Hex.decode))
        let more = try #require(answer.headers[ExpressProtocol.Header.more])
        let signed = ExpressProtocol.responseToSign(nonce: nonce, status: answer.status, body: answer.body, more: more)
        #expect(IdentitySignature.verify(message: signed, signature: signature, publicKey: service.publicKey))
        let other = ExpressProtocol.responseToSign(
            nonce: ExpressProtocol.newNonce(), status: answer.status, body: answer.body, more: more)
        #expect(!IdentitySignature.verify(message: other, signature: signature, publicKey: service.publicKey))
        // X-Carrier-More is signed too: a changed one does not verify.
        let flipped = ExpressProtocol.responseToSign(
            nonce: nonce, status: answer.status, body: answer.body, more: more == "1" ? "0" : "1")
        #expect(!IdentitySignature.verify(message: flipped, signature: signature, publicKey: service.publicKey))
    }

    @Test(arguments: StoreKind.allCases) func aDepositInAnotherSendersNameIsRefused(_ kind: StoreKind) async throws {
        let store = try await TestStore(kind)
        let service = try ExpressService(configuration: store.configuration())
        befriend([alice, bob, carol], on: service)
        let path = "/v1/messages/\(bob.id)/\(Hex.encode(randomId()))"
        let forged = carol.request("POST", path, body: carol.seal("hi", to: bob.id), to: service, claiming: alice.id)
        let answer = service.handle(forged)
        #expect(answer.status == 401 && answer.text.contains("signature"))
        #expect(
            ExpressProtocol.Record.decodeAll(
                service.handle(bob.request("GET", "/v1/messages/after/0", to: service)).body) == [])
        await store.stop()
    }

    @Test(arguments: StoreKind.allCases) func onlyTheRecipientPullsOrDeletesItsMessages(_ kind: StoreKind) async throws
    {
        let store = try await TestStore(kind)
        let service = try ExpressService(configuration: store.configuration())
        befriend([alice, bob, carol], on: service)
        #expect(deposit(service, from: alice, to: bob, "for bob").status == 201)
        // Carol pulls and deletes: she sees and removes only her own (none).
        let carolPull = service.handle(carol.request("GET", "/v1/messages/after/0", to: service))
        #expect(carolPull.status == 200 && carolPull.body.isEmpty)
        let carolDelete = service.handle(carol.request("DELETE", "/v1/messages/through/1000", to: service))
        #expect(carolDelete.text == #"{"deleted":0}"#)
        // Carol claiming to be Bob is refused.
        let posing = service.handle(carol.request("GET", "/v1/messages/after/0", to: service, claiming: bob.id))
        #expect(posing.status == 401)
        #expect(
            ExpressProtocol.Record.decodeAll(
                service.handle(bob.request("GET", "/v1/messages/after/0", to: service)).body)?.count == 1)
        await store.stop()
    }

    @Test(arguments: StoreKind.allCases) func replayedAndStaleRequestsAreRefused(_ kind: StoreKind) async throws {
        let store = try await TestStore(kind)
        let service = try ExpressService(configuration: store.configuration())
        befriend([alice, bob, carol], on: service)
        let request = bob.request("GET", "/v1/messages/after/0", to: service)
        #expect(service.handle(request).status == 200)
        let replay = service.handle(request)
        #expect(replay.status == 401 && replay.text == "replayed request")
        let old = Int64(Date().timeIntervalSince1970 * 1000) - 10 * 60 * 1000
        let stale = service.handle(bob.request("GET", "/v1/messages/after/0", to: service, time: old))
        #expect(stale.status == 401 && stale.text.contains("time"))
        // A request signed for another Express node does not pass here.
        let other = try ExpressService(configuration: .init())
        let elsewhere = service.handle(bob.request("GET", "/v1/messages/after/0", to: other))
        #expect(elsewhere.status == 401)
        await store.stop()
    }

    @Test func oversizeMalformedAndUnknownRequestsGetClearStatuses() throws {
        let service = try ExpressService(configuration: .init())
        befriend([alice, bob, carol], on: service)
        var big = bob.request("POST", "/v1/messages/\(alice.id)/\(Hex.encode(randomId()))", body: [1], to: service)
        big.bodyTooLarge = true
        #expect(service.handle(big).status == 413)
        let huge = [UInt8](repeating: 7, count: ExpressProtocol.maxBodySize + 1)
        #expect(
            service.handle(
                bob.request("POST", "/v1/messages/\(alice.id)/\(Hex.encode(randomId()))", body: huge, to: service)
            ).status == 413)
        #expect(
            service.handle(bob.request("POST", "/v1/messages/nobody/\(Hex.encode(randomId()))", body: [1], to: service))
                .status == 400)
        #expect(
            service.handle(bob.request("POST", "/v1/messages/\(alice.id)/xyz", body: [1], to: service)).status == 400)
        #expect(
            service.handle(HttpRequest(method: "GET", path: "/v1/messages/after/0", headers: [:], body: [])).status
                == 400)
        #expect(service.handle(bob.request("GET", "/v1/nothing", to: service)).status == 404)
        #expect(service.handle(bob.request("PUT", "/v1/turn", to: service)).status == 405)
        #expect(service.handle(bob.request("POST", "/v1/turn", to: service)).status == 404)
    }

    @Test(arguments: StoreKind.allCases) func aRecipientsQuotaIsEnforced(_ kind: StoreKind) async throws {
        let store = try await TestStore(kind)
        var configuration = store.configuration()
        configuration.messagesPerRecipient = 3
        let service = try ExpressService(configuration: configuration)
        befriend([alice, bob, carol], on: service)
        for index in 0..<3 { #expect(deposit(service, from: alice, to: bob, "m\(index)").status == 201) }
        let refused = deposit(service, from: alice, to: bob, "one too many")
        #expect(refused.status == 429 && refused.text.contains("at most 3"))
        // Another recipient is not affected.
        #expect(deposit(service, from: alice, to: carol, "fine").status == 201)
        await store.stop()
    }

    @Test(arguments: StoreKind.allCases) func aRetriedDepositIsStoredOnce(_ kind: StoreKind) async throws {
        let store = try await TestStore(kind)
        let service = try ExpressService(configuration: store.configuration())
        befriend([alice, bob, carol], on: service)
        let id = randomId()
        let body = alice.seal("once", to: bob.id, id: id)
        let path = "/v1/messages/\(bob.id)/\(Hex.encode(id))"
        #expect(service.handle(alice.request("POST", path, body: body, to: service)).status == 201)
        #expect(service.handle(alice.request("POST", path, body: body, to: service)).status == 200)
        #expect(
            ExpressProtocol.Record.decodeAll(
                service.handle(bob.request("GET", "/v1/messages/after/0", to: service)).body)?.count == 1)
        await store.stop()
    }

    @Test(arguments: StoreKind.allCases) func oldMessagesExpire(_ kind: StoreKind) async throws {
        let store = try await TestStore(kind)
        var configuration = store.configuration()
        configuration.maxAgeSeconds = 60
        let clock = TestClock()
        let service = try ExpressService(configuration: configuration, now: { clock.now })
        befriend([alice, bob, carol], on: service)
        #expect(deposit(service, from: alice, to: bob, "soon gone").status == 201)
        clock.advance(seconds: 120)
        let pulled = service.handle(bob.request("GET", "/v1/messages/after/0", to: service, time: clock.milliseconds))
        #expect(pulled.status == 200 && pulled.body.isEmpty)
        await store.stop()
    }

    @Test func aRestartKeepsWhatWasConfirmedAndTheKey() throws {
        let path = NSTemporaryDirectory() + "express-\(UUID().uuidString.prefix(8)).db"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        var key: [UInt8] = []
        do {
            let service = try ExpressService(configuration: .init(databasePath: path))
            befriend([alice, bob, carol], on: service)
            key = service.publicKey
            #expect(deposit(service, from: alice, to: bob, "kept").status == 201)
        }
        let again = try ExpressService(configuration: .init(databasePath: path))
        befriend([alice, bob, carol], on: again)
        #expect(again.publicKey == key)
        let records = ExpressProtocol.Record.decodeAll(
            again.handle(bob.request("GET", "/v1/messages/after/0", to: again)).body)
        #expect(records?.count == 1)
    }

    @Test func turnCredentialsInCoturnsRestForm() throws {
        var configuration = ExpressService.Configuration()
        configuration.turn = TurnIssuer(urls: ["turn:127.0.0.1:3478"], secret: "s3cret", lifetimeSeconds: 600)
        let service = try ExpressService(configuration: configuration)
        befriend([alice, bob, carol], on: service)
        let answer = service.handle(alice.request("POST", "/v1/turn", to: service))
        #expect(answer.status == 200)
        let info = try JSONDecoder().decode(TurnServerInfo.self, from: Data(answer.body))
        #expect(info.urls == ["turn:127.0.0.1:3478"])
        #expect(info.username == "\(info.expires):\(alice.id)")
        let now = Int64(Date().timeIntervalSince1970)
        #expect(info.expires > now + 590 && info.expires <= now + 601)
        #expect(info.credential == TurnIssuer.password(secret: "s3cret", username: info.username))
        // RFC 2104 test vector 2 for HMAC-SHA1 ("Jefe"), in base64.
        #expect(
            TurnIssuer.password(secret: "Jefe", username: "what do ya want for nothing?")
                == "7/zfauXrL6LSdBbV8YTfnCWafHk=")
        #expect(info.stunUrls == nil)  // none configured: not said
    }

    /// STUN URLs go out beside the TURN credentials when the node has them.
    @Test func stunUrlsComeWithTheTurnCredentials() throws {
        var configuration = ExpressService.Configuration()
        configuration.turn = TurnIssuer(
            urls: ["turn:turn.lab.test:3478"], secret: "s3cret", stunUrls: ["stun:stun.lab.test:3478"])
        let service = try ExpressService(configuration: configuration)
        befriend([alice, bob, carol], on: service)
        let answer = service.handle(alice.request("POST", "/v1/turn", to: service))
        let info = try JSONDecoder().decode(TurnServerInfo.self, from: Data(answer.body))
        #expect(info.stunUrls == ["stun:stun.lab.test:3478"])
        // An answer from an older node, without the field, still decodes.
        let old = #"{"urls":["turn:a:1"],"username":"1:u","credential":"c","expires":1}"#
        #expect(try JSONDecoder().decode(TurnServerInfo.self, from: Data(old.utf8)).stunUrls == nil)
    }
}

/// The two stores every service test runs against.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// A store for one test: SQLite in memory, or a PostgreSQL server of the test's own.
final class TestStore: Sendable {
    let server: PostgresServer?

    init(_ kind: StoreKind) async throws {
        server = kind == .postgres ? try await PostgresServer() : nil
    }

    /// Without rate limits (tests of them set their own).
    func configuration() -> ExpressService.Configuration {
        var configuration = server.map { ExpressService.Configuration(database: .postgres(url: $0.url())) } ?? .init()
        configuration.rates.enabled = false
        return configuration
    }

    func stop() async { await server?.stop() }
}

final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date()
    var now: Date { lock.withLock { current } }
    var milliseconds: Int64 { Int64(now.timeIntervalSince1970 * 1000) }
    func advance(seconds: Double) { lock.withLock { current += seconds } }
}
