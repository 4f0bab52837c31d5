import Foundation
import TestSupport
import Testing

@testable import CarrierNode
@testable import ExpressServer

/// Several Express nodes on one PostgreSQL database acting as one: each test
/// starts its own server and two (or more) services on it, and drives them
/// from several threads at once, as libmicrohttpd's pools would.
@Suite struct ExpressClusterTests {
    let alice = TestUser()
    let bob = TestUser()

    func pair(_ server: PostgresServer, configure: (inout ExpressService.Configuration) -> Void = { _ in })
        throws -> (ExpressService, ExpressService)
    {
        var configuration = ExpressService.Configuration(database: .postgres(url: server.url()))
        configuration.rates.enabled = false
        configure(&configuration)
        let pair = (try ExpressService(configuration: configuration), try ExpressService(configuration: configuration))
        befriend([alice, bob], on: pair.0)  // one database: registered on both
        return pair
    }

    @Test func nodesOnOneDatabaseShareTheKeyAndTheMailboxes() async throws {
        let server = try await PostgresServer()
        let (first, second) = try pair(server)
        #expect(first.publicKey == second.publicKey)
        let id = randomId()
        let path = "/v1/messages/\(bob.id)/\(Hex.encode(id))"
        let body = alice.seal("through the first", to: bob.id, id: id)
        #expect(first.handle(alice.request("POST", path, body: body, to: first)).status == 201)
        // The same deposit retried through the other node is a duplicate, not a second copy.
        #expect(second.handle(alice.request("POST", path, body: body, to: second)).status == 200)
        let pulled = second.handle(bob.request("GET", "/v1/messages/after/0", to: second))
        #expect(ExpressProtocol.Record.decodeAll(pulled.body)?.map(\.sealed) == [body])
        first.close()
        second.close()
        await server.stop()
    }

    @Test func aRequestReplayedToAnotherNodeIsRefused() async throws {
        let server = try await PostgresServer()
        let (first, second) = try pair(server)
        let request = bob.request("GET", "/v1/messages/after/0", to: first)
        #expect(first.handle(request).status == 200)
        let replay = second.handle(request)
        #expect(replay.status == 401 && replay.text == "replayed request")
        first.close()
        second.close()
        await server.stop()
    }

    /// 40 deposits for one recipient at once, half through each node, with
    /// room for 10: exactly 10 are stored.
    @Test func aQuotaIsCountedAcrossNodes() async throws {
        let server = try await PostgresServer()
        let (first, second) = try pair(server) { $0.messagesPerRecipient = 10 }
        let requests = (0..<40).map { index -> (ExpressService, HttpRequest) in
            let node = index % 2 == 0 ? first : second
            let id = randomId()
            let path = "/v1/messages/\(bob.id)/\(Hex.encode(id))"
            return (node, alice.request("POST", path, body: alice.seal("m\(index)", to: bob.id, id: id), to: node))
        }
        let statuses = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: requests.count) { index in
            let (node, request) = requests[index]
            let status = node.handle(request).status
            statuses.withLock { $0.append(status) }
        }
        let all = statuses.withLock { $0 }
        #expect(all.filter { $0 == 201 }.count == 10)
        #expect(all.filter { $0 == 429 }.count == 30)
        let records = ExpressProtocol.Record.decodeAll(
            first.handle(bob.request("GET", "/v1/messages/after/0", to: first)).body)
        #expect(records?.count == 10)
        first.close()
        second.close()
        await server.stop()
    }

    /// 300 records pulled by six pullers at once, three through each node,
    /// each pulling from the start and deleting what it got: every record is
    /// handed out exactly once.
    @Test func concurrentPullsThroughBothNodesHandOutEachRecordOnce() async throws {
        let server = try await PostgresServer()
        let (first, second) = try pair(server) { $0.pullMaxRecords = 7 }
        var deposited: Set<[UInt8]> = []
        for index in 0..<300 {
            let id = randomId()
            let body = alice.seal("m\(index)", to: bob.id, id: id)
            let path = "/v1/messages/\(bob.id)/\(Hex.encode(id))"
            #expect(first.handle(alice.request("POST", path, body: body, to: first)).status == 201)
            deposited.insert(body)
        }
        let received = Locked<[[UInt8]]>([])
        let bob = self.bob
        DispatchQueue.concurrentPerform(iterations: 6) { puller in
            let node = puller % 2 == 0 ? first : second
            while true {
                let answer = node.handle(bob.request("GET", "/v1/messages/after/0", to: node))
                guard answer.status == 200, let records = ExpressProtocol.Record.decodeAll(answer.body),
                    let last = records.last
                else { return }
                received.withLock { $0 += records.map(\.sealed) }
                _ = node.handle(bob.request("DELETE", "/v1/messages/through/\(last.seq)", to: node))
            }
        }
        let all = received.withLock { $0 }
        #expect(all.count == 300, "handed out \(all.count) times for 300 records")
        #expect(Set(all).count == all.count, "a record was handed out twice")
        #expect(Set(all).isSubset(of: deposited))
        first.close()
        second.close()
        await server.stop()
    }

    /// The purge runs on one node at a time: while another holds its lock, a
    /// node skips it (old messages stay); once free, the node purges.
    @Test func thePurgeRunsOnOneNodeAtATime() async throws {
        let server = try await PostgresServer()
        let store = try PostgresExpressStore(
            url: server.url(), connections: 2, limits: StoreLimits(maxAgeSeconds: 60))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let old = now - 120_000
        #expect(
            try store.deposit(
                recipient: bob.id, sender: alice.id, messageId: randomId(), body: [1], kind: .message, now: old)
                == .stored(seq: 1))
        let other = try PostgresConnection(url: server.url())
        try other.query("SELECT pg_advisory_lock($1)", [.integer(PostgresExpressStore.LockKey.purge)])
        try store.purge(now: now)
        #expect(try await server.psql("SELECT count(*) FROM messages") == "1")
        try other.query("SELECT pg_advisory_unlock($1)", [.integer(PostgresExpressStore.LockKey.purge)])
        try store.purge(now: now)
        #expect(try await server.psql("SELECT count(*) FROM messages") == "0")
        store.close()
        await server.stop()
    }

    /// Upgrading: a database with the first schema (as version 1 left it, one
    /// message waiting) is migrated at start and the message is still there.
    @Test func anOlderSchemaIsUpgradedWithItsMessages() async throws {
        let server = try await PostgresServer()
        guard let first = ExpressSchema.migrations.first else { return }
        try await server.psql(
            first.postgres + """
                CREATE TABLE schema_version(version INTEGER NOT NULL);
                INSERT INTO schema_version VALUES (1);
                """)
        let body = alice.seal("from before the upgrade", to: bob.id)
        try await server.psql(
            """
            INSERT INTO messages(recipient, sender, message_id, stored_at, body)
            VALUES ('\\x\(Hex.encode(bob.id.publicKey))', '\\x\(Hex.encode(alice.id.publicKey))',
                    '\\x\(Hex.encode(randomId()))', \(Int64(Date().timeIntervalSince1970 * 1000)),
                    '\\x\(Hex.encode(body))')
            """)
        let service = try ExpressService(configuration: .init(database: .postgres(url: server.url())))
        befriend([alice, bob], on: service)
        #expect(try service.schemaVersion() == ExpressSchema.latest)
        let pulled = service.handle(bob.request("GET", "/v1/messages/after/0", to: service))
        #expect(ExpressProtocol.Record.decodeAll(pulled.body)?.map(\.sealed) == [body])
        #expect(try await server.psql("SELECT size FROM messages") == "\(body.count)")
        service.close()
        await server.stop()
    }

    @Test func anOlderSQLiteFileIsUpgradedWithItsMessages() throws {
        let path = NSTemporaryDirectory() + "express-v1-\(UUID().uuidString.prefix(8)).db"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let body = alice.seal("from before the upgrade", to: bob.id)
        do {
            // What a node before versioning made: the first schema at user_version 0.
            let old = try SQLiteDatabase(path: path)
            try old.execute(ExpressSchema.migrations[0].sqlite)
            try old.query(
                "INSERT INTO messages(recipient, sender, message_id, stored_at, body) VALUES(?, ?, ?, ?, ?)",
                [
                    .blob(bob.id.publicKey), .blob(alice.id.publicKey), .blob(randomId()),
                    .integer(Int64(Date().timeIntervalSince1970 * 1000)), .blob(body),
                ])
        }
        let service = try ExpressService(configuration: .init(databasePath: path))
        befriend([alice, bob], on: service)
        #expect(try service.schemaVersion() == ExpressSchema.latest)
        let pulled = service.handle(bob.request("GET", "/v1/messages/after/0", to: service))
        #expect(ExpressProtocol.Record.decodeAll(pulled.body)?.map(\.sealed) == [body])
    }

    /// A node whose database went away answers 500 (the client tries the
    /// next node) and works again once the database is back.
    @Test func aDatabaseOutageIsAnErrorNotACrash() async throws {
        let server = try await PostgresServer()
        let service = try ExpressService(configuration: .init(database: .postgres(url: server.url())))
        befriend([alice, bob], on: service)
        let id = randomId()
        let path = "/v1/messages/\(bob.id)/\(Hex.encode(id))"
        let body = alice.seal("kept", to: bob.id, id: id)
        #expect(service.handle(alice.request("POST", path, body: body, to: service)).status == 201)
        try await server.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'carrier-express'")
        // The pooled connection was cut: the next request reconnects or fails cleanly.
        var statuses: [Int] = []
        for _ in 0..<3 {
            statuses.append(service.handle(bob.request("GET", "/v1/messages/after/0", to: service)).status)
        }
        #expect(statuses.allSatisfy { $0 == 200 || $0 == 500 }, "\(statuses)")
        #expect(statuses.last == 200, "\(statuses)")
        service.close()
        await server.stop()
    }
}
