import Foundation
import Testing

@testable import CarrierNode
@testable import ExpressServer

/// An Express node against users who try to fill it, flood it or take its
/// TURN server: each limit is reached and answered as docs/express.md says.
@Suite struct ExpressAbuseTests {
    let alice = TestUser()
    let bob = TestUser()
    let carol = TestUser()

    func message(_ service: ExpressService, from sender: TestUser, to recipient: TestUser, size: Int = 10)
        -> HttpResponse
    {
        let path = "/v1/messages/\(recipient.id)/\(Hex.encode(randomId()))"
        let body = sender.seal(String(repeating: "x", count: size), to: recipient.id)
        return service.handle(sender.request("POST", path, body: body, to: service))
    }

    func friendRequest(_ service: ExpressService, from sender: TestUser, to recipient: UserId, size: Int = 10)
        -> HttpResponse
    {
        let path = "/v1/requests/\(recipient)/\(Hex.encode(randomId()))"
        let body = sender.seal(String(repeating: "x", count: size), to: recipient)
        return service.handle(sender.request("POST", path, body: body, to: service))
    }

    /// The issue's attack: one key stores for made-up recipients. Messages
    /// need a registration no made-up recipient made; friend requests are
    /// bounded by the sender's quota and one per recipient.
    @Test(arguments: StoreKind.allCases) func madeUpRecipientsGetNothingAndRequestsAreBounded(_ kind: StoreKind)
        async throws
    {
        let store = try await TestStore(kind)
        var configuration = store.configuration()
        configuration.recordsPerSender = 5
        let service = try ExpressService(configuration: configuration)
        let nobody = TestUser()
        let refused = message(service, from: alice, to: nobody)
        #expect(refused.status == 403 && refused.text.contains("has not registered you"))
        let ghosts = (0..<6).map { _ in TestUser().id }
        let statuses = ghosts.map { friendRequest(service, from: alice, to: $0).status }
        #expect(statuses == [201, 201, 201, 201, 201, 429])
        // One friend request waits per sender and recipient; a large one is refused before it is read.
        #expect(friendRequest(service, from: bob, to: carol.id).status == 201)
        #expect(friendRequest(service, from: bob, to: carol.id).text.contains("already waits"))
        #expect(friendRequest(service, from: carol, to: bob.id, size: 5000).status == 413)
        await store.stop()
    }

    /// A sender's bytes are bounded over every recipient, and the node's in all (507).
    @Test(arguments: StoreKind.allCases) func aSenderAndTheNodeAreBoundedInBytes(_ kind: StoreKind) async throws {
        let store = try await TestStore(kind)
        var configuration = store.configuration()
        configuration.bytesPerSender = 3000
        configuration.bytesPerNode = 5000
        let service = try ExpressService(configuration: configuration)
        befriend([alice, bob, carol], on: service)
        #expect(message(service, from: alice, to: bob, size: 1000).status == 201)
        #expect(message(service, from: alice, to: carol, size: 1000).status == 201)
        let sender = message(service, from: alice, to: bob, size: 1000)
        #expect(sender.status == 429 && sender.text.contains("would pass 3000 bytes"), "\(sender.text)")
        #expect(message(service, from: bob, to: carol, size: 1000).status == 201)
        #expect(message(service, from: carol, to: alice, size: 1000).status == 201)
        let full = message(service, from: carol, to: bob, size: 1000)
        #expect(full.status == 507 && full.text.contains("full"), "\(full.text)")
        await store.stop()
    }

    /// Deposits per sender and per address, and friend requests per sender,
    /// run out and come back with time.
    @Test func depositsAreRateLimitedPerSenderAndPerAddress() throws {
        var configuration = ExpressService.Configuration()
        configuration.rates.depositsPerMinute = 60
        configuration.rates.depositBurst = 3
        configuration.rates.addressDepositsPerMinute = 60
        configuration.rates.addressDepositBurst = 5
        configuration.rates.requestBurst = 2
        let clock = TestClock()
        let service = try ExpressService(configuration: configuration, now: { clock.now })
        befriend([alice, bob, carol], on: service)
        func deposit(_ sender: TestUser, from address: String) -> Int {
            let path = "/v1/messages/\(bob.id)/\(Hex.encode(randomId()))"
            var request = sender.request(
                "POST", path, body: sender.seal("m", to: bob.id), to: service,
                time: clock.milliseconds)
            request.peerAddress = address
            return service.handle(request).status
        }
        #expect((0..<4).map { _ in deposit(alice, from: "198.18.0.1") } == [201, 201, 201, 429])
        // Carol from the same address: one more (Alice's refused deposit spent one too), then it is out.
        #expect((0..<3).map { _ in deposit(carol, from: "198.18.0.1") } == [201, 429, 429])
        #expect(deposit(carol, from: "198.18.0.2") == 201)
        clock.advance(seconds: 2)  // a token a second comes back
        #expect(deposit(alice, from: "198.18.0.3") == 201)
        // Friend requests: two at once, then one a minute.
        let requests = (0..<3).map { _ in
            friendRequestStatus(service, from: carol, clock: clock)
        }
        #expect(requests == [201, 201, 429])
    }

    func friendRequestStatus(_ service: ExpressService, from sender: TestUser, clock: TestClock) -> Int {
        let recipient = TestUser().id
        let path = "/v1/requests/\(recipient)/\(Hex.encode(randomId()))"
        return service.handle(
            sender.request(
                "POST", path, body: sender.seal("hello", to: recipient), to: service, time: clock.milliseconds)
        ).status
    }

    /// TURN credentials: rate-limited per user, and restricted by the operator's policy.
    @Test func turnCredentialsAreRateLimitedAndRestricted() throws {
        var configuration = ExpressService.Configuration()
        configuration.turn = TurnIssuer(urls: ["turn:127.0.0.1:3478"], secret: "s3cret")
        configuration.rates.turnBurst = 2
        let open = try ExpressService(configuration: configuration)
        let statuses = (0..<3).map { _ in open.handle(alice.request("POST", "/v1/turn", to: open)).status }
        #expect(statuses == [200, 200, 429])

        configuration.turnPolicy = .allowList([bob.id])
        let listed = try ExpressService(configuration: configuration)
        #expect(listed.handle(bob.request("POST", "/v1/turn", to: listed)).status == 200)
        #expect(listed.handle(alice.request("POST", "/v1/turn", to: listed)).status == 403)

        configuration.turnPolicy = .mailboxUsers
        let mailbox = try ExpressService(configuration: configuration)
        #expect(mailbox.handle(alice.request("POST", "/v1/turn", to: mailbox)).status == 403)
        befriend([alice, bob], on: mailbox)
        #expect(mailbox.handle(alice.request("POST", "/v1/turn", to: mailbox)).status == 200)
    }

    /// The database holds the node's secret key: made 0600, and made so at start if others could read it.
    @Test func theDatabaseFileIsPrivate() throws {
        let directory = NSTemporaryDirectory() + "/express-mode-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mode = { (path: String) in try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        }
        let fresh = directory + "/fresh.db"
        try ExpressService(configuration: .init(databasePath: fresh)).close()
        #expect(try mode(fresh) == 0o600)
        let loose = directory + "/loose.db"
        FileManager.default.createFile(atPath: loose, contents: nil, attributes: [.posixPermissions: 0o644])
        try ExpressService(configuration: .init(databasePath: loose)).close()
        #expect(try mode(loose) == 0o600)
        try FileManager.default.createSymbolicLink(atPath: directory + "/link.db", withDestinationPath: fresh)
        #expect(throws: (any Error).self) {
            try ExpressService(configuration: .init(databasePath: directory + "/link.db"))
        }
    }

    @Test func contactRegistrationsAreBounded() throws {
        let service = try ExpressService(configuration: .init())
        let tooMany = [UInt8](repeating: 7, count: (ExpressContact.maxContacts + 1) * ExpressContact.size)
        #expect(service.handle(alice.request("PUT", "/v1/contacts", body: tooMany, to: service)).status == 400)
        #expect(service.handle(alice.request("PUT", "/v1/contacts", body: [1, 2, 3], to: service)).status == 400)
        #expect(service.handle(alice.request("PUT", "/v1/contacts", body: [], to: service)).text == #"{"contacts":0}"#)
    }

    /// Both friends derive the same token; a stranger's differs; the hash binds the sender.
    @Test func contactTokensAreSharedByTheTwoFriendsOnly() throws {
        let server = (0..<32).map { UInt8($0) }
        let ab = try #require(ExpressContact.token(secretKey: alice.secretKey, peer: bob.id, serverKey: server))
        let ba = try #require(ExpressContact.token(secretKey: bob.secretKey, peer: alice.id, serverKey: server))
        let cb = try #require(ExpressContact.token(secretKey: carol.secretKey, peer: bob.id, serverKey: server))
        let other = try #require(
            ExpressContact.token(secretKey: alice.secretKey, peer: bob.id, serverKey: Array(server.reversed())))
        #expect(ab == ba && ab != cb && ab != other)
        #expect(
            ExpressContact.registered(token: ab, sender: alice.id)
                != ExpressContact.registered(token: ab, sender: carol.id))
    }
}

/// The pure parts: token buckets and the connection guard.
@Suite struct ExpressLimiterTests {
    @Test func aBucketSpendsItsBurstAndRefillsWithTime() {
        var limiter = RateLimiter(perMinute: 60, burst: 2)
        let spent = (0..<3).map { _ in limiter.allow("a", now: 0) }
        #expect(spent == [true, true, false])
        let other = limiter.allow("b", now: 0)
        let early = limiter.allow("a", now: 500)
        let later = limiter.allow("a", now: 1000)
        #expect(other && !early && later)
    }

    /// Many keys cannot grow the table: full buckets are forgotten, and past
    /// the bound with none full a new key waits.
    @Test func theTableOfKeysIsBounded() {
        var limiter = RateLimiter(perMinute: 60, burst: 1, maxKeys: 3)
        let first = ["a", "b", "c"].map { limiter.allow($0, now: 0) }
        let refused = limiter.allow("d", now: 0)
        let later = limiter.allow("d", now: 1000)
        #expect(first == [true, true, true] && !refused && later && limiter.count <= 3)
    }

    @Test func aBusyAddressLeavesTheReservedShareToOthers() {
        var guarded = ConnectionGuard(maxConnections: 8, requestMilliseconds: 1000)
        guarded.busyAddress = 2
        var admitted = 0
        for index in 0..<8 where guarded.admit("198.18.0.1", now: 0) {
            guarded.started(UInt(index), address: "198.18.0.1", descriptor: Int32(index), now: 0)
            admitted += 1
        }
        #expect(admitted == 6)  // 75% of 8
        let other = (0..<3).map { _ in guarded.admit("198.18.0.2", now: 0) }
        #expect(other == [true, true, false])
        guarded.started(100, address: "198.18.0.2", descriptor: 100, now: 0)
        guarded.started(101, address: "198.18.0.2", descriptor: 101, now: 0)
        for id in 0..<4 { guarded.closed(UInt(id)) }
        let again = guarded.admit("198.18.0.1", now: 0)
        #expect(again)
        // An admission that never started (dropped inside libmicrohttpd) is forgotten in time.
        var lost = ConnectionGuard(maxConnections: 4, requestMilliseconds: 1000)
        lost.busyAddress = 1
        let first = (0..<4).map { _ in lost.admit("x", now: 0) }
        let later = lost.admit("x", now: ConnectionGuard.admittedMilliseconds + 1)
        #expect(first == [true, true, true, false] && later)
    }

    @Test func aRequestPastItsTimeIsCutAndAnsweredOnesStartAgain() {
        var guarded = ConnectionGuard(maxConnections: 8, requestMilliseconds: 1000)
        _ = guarded.admit("a", now: 0)
        guarded.started(1, address: "a", descriptor: 11, now: 0)
        _ = guarded.admit("a", now: 0)
        guarded.started(2, address: "a", descriptor: 12, now: 0)
        guarded.requestEnded(2, now: 900)
        #expect(guarded.overdue(now: 1500) == [11])
        guarded.closed(1)
        #expect(guarded.overdue(now: 1900).isEmpty && guarded.overdue(now: 1901) == [12])
    }
}
