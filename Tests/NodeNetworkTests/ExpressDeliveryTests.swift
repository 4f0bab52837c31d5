import ExpressServer
import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// Offline delivery through a real Express node (HTTP on 127.0.0.1, SQLite on
/// disk) between real toxcore nodes. Serialized: one test uses a process-wide hook.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ExpressDeliveryTests {
    /// Two friends with Express configured, on the shared network.
    struct Pair {
        let sender: Carrier
        let recipientName: String
        let recipientId: UserId
        let root: String
        let entry: BootstrapNode
        let express: [ExpressNode]

        func startRecipient(ports: ClosedRange<UInt16>? = nil) async throws -> Carrier {
            let node = try Self.node(recipientName, root: root, entry: entry, express: express, ports: ports)
            try await node.start()
            return node
        }

        static func node(
            _ name: String, root: String, entry: BootstrapNode, express: [ExpressNode],
            ports: ClosedRange<UInt16>? = nil
        ) throws -> Carrier {
            var options = CarrierOptions(dataDirectory: root + "/" + name, bootstrapNodes: [entry])
            options.loopbackOnly = true
            options.udpPorts = ports
            options.expressNodes = express
            return try Carrier(options: options)
        }

        static func make(_ net: TestNetwork, tag: String, express: [ExpressNode]) async throws -> (Pair, Carrier) {
            let sender = try node("sender-\(tag)", root: net.root, entry: net.entry, express: express)
            let recipient = try node("recipient-\(tag)", root: net.root, entry: net.entry, express: express)
            try await sender.start()
            try await recipient.start()
            #expect(await sender.waitUntilReady(timeout: .seconds(60)))
            #expect(await recipient.waitUntilReady(timeout: .seconds(60)))
            let recipientEvents = await recipient.events()
            try await TestNetwork.befriend(sender, recipient)
            // Neither set user info: their empty status messages are not bad packets.
            let senderId = sender.userId
            let dropped = await recipientEvents.first(within: .seconds(2)) { event -> String? in
                if case .dropped(senderId?, let reason) = event { return reason }
                return nil
            }
            #expect(dropped == nil)
            #expect(await recipient.stats().malformedPackets == 0)
            let pair = Pair(
                sender: sender, recipientName: "recipient-\(tag)", recipientId: recipient.userId, root: net.root,
                entry: net.entry, express: express)
            return (pair, recipient)
        }

        /// Stops the recipient and waits until the sender sees it offline.
        func takeOffline(_ recipient: Carrier) async {
            let events = await sender.events()
            let id = recipientId
            await recipient.stop()
            if await sender.friendInfo(id)?.connected == true {
                _ = await events.first(within: .seconds(60)) { event -> Bool? in
                    if case .friendConnection(id, false) = event { return true }
                    return nil
                }
            }
        }
    }

    static func offlineTexts(
        _ events: AsyncStream<CarrierEvent>, from sender: UserId, within timeout: Duration, until count: Int
    )
        async -> [(String, Date)]
    {
        let log = MessageLog()
        _ = await events.first(within: timeout) { event -> Bool? in
            if case .message(sender, nil, let data, let timestamp, true) = event {
                return log.append(String(decoding: data, as: UTF8.self), timestamp) >= count ? true : nil
            }
            return nil
        }
        return log.items
    }

    @Test func aMessageToAnOfflineFriendArrivesOnceWhenItIsBackEvenAcrossAnExpressRestart() async throws {
        let net = try await TestNetwork.shared()
        let database = net.root + "/express-\(UUID().uuidString.prefix(6)).db"
        var server: ExpressEndpoint? = try ExpressEndpoint(configuration: .init(databasePath: database))
        let entry = try #require(server?.entry)
        let (pair, recipient) = try await Pair.make(net, tag: "a", express: [entry])
        await pair.takeOffline(recipient)

        let sentAt = Date()
        let first = try await pair.sender.deliverMessage(
            Array("while you were away".utf8), to: pair.recipientId.description)
        #expect(first == .offline)
        // The Express node restarts (same database and port): what it confirmed is still there.
        server?.stop()
        server = try ExpressEndpoint(port: entry.port, configuration: .init(databasePath: database))
        #expect(server?.entry == entry)
        let second = try await pair.sender.deliverMessage(Array("and again".utf8), to: pair.recipientId.description)
        #expect(second == .offline)

        let again = try Pair.node(
            pair.recipientName, root: pair.root, entry: pair.entry, express: pair.express, ports: 43000...43999)
        let events = await again.events()
        try await again.start()
        let received = await Self.offlineTexts(events, from: pair.sender.userId, within: .seconds(60), until: 2)
        #expect(received.map(\.0) == ["while you were away", "and again"])
        #expect(abs((received.first?.1 ?? .distantPast).timeIntervalSince(sentAt)) < 5, "the sender's time is kept")
        // Nothing more comes: a later pull finds nothing (deleted on Express).
        await again.requestPull()
        let more = await Self.offlineTexts(events, from: pair.sender.userId, within: .seconds(3), until: 1)
        #expect(more.isEmpty)
        await again.stop()
        await pair.sender.stop()
        server?.stop()
    }

    /// A friend who looks online but sends no receipt: after
    /// `offlineFallbackAfter` the message goes to Express (receipt offline) and
    /// the friend gets it from there.
    @Test func aMessageWhoseReceiptIsLateGoesToExpress() async throws {
        let net = try await TestNetwork.shared()
        let server = try ExpressEndpoint(configuration: .init())
        let (pair, recipient) = try await Pair.make(net, tag: "late", express: [server.entry])
        let events = await pair.sender.events()
        // As if the message had gone out 31 s ago and no receipt had come.
        let id = await pair.sender.pretendSentWithoutReceipt(
            Array("late one".utf8), to: pair.recipientId, ago: .seconds(31))
        let state = await events.first(within: .seconds(30)) { event -> ReceiptState? in
            if case .receipt(id, _, let state) = event { return state }
            return nil
        }
        #expect(state == .offline)
        let inbox = await recipient.events()
        await recipient.requestPull()
        let received = await Self.offlineTexts(inbox, from: pair.sender.userId, within: .seconds(30), until: 1)
        #expect(received.map(\.0) == ["late one"])
        await recipient.stop()
        await pair.sender.stop()
        server.stop()
    }

    /// The recipient "dies" after keeping the pulled records and before deleting
    /// them on Express: started again, it delivers each message exactly once.
    @Test func aCrashBetweenPullAndDeleteDeliversOnce() async throws {
        let net = try await TestNetwork.shared()
        let server = try ExpressEndpoint(configuration: .init(databasePath: net.root + "/express-crash.db"))
        let (pair, recipient) = try await Pair.make(net, tag: "b", express: [server.entry])
        await pair.takeOffline(recipient)
        #expect(
            try await pair.sender.deliverMessage(Array("exactly once".utf8), to: pair.recipientId.description)
                == .offline)

        Carrier.stopPullAfterKeepingForTests = true
        let crashing = try Pair.node(
            pair.recipientName, root: pair.root, entry: pair.entry, express: pair.express, ports: 44000...44999)
        let inbox = pair.root + "/" + pair.recipientName + "/offline-inbox"
        try await crashing.start()
        var kept = false
        for _ in 0..<600 where !kept {
            kept = ((try? FileManager.default.contentsOfDirectory(atPath: inbox)) ?? []).contains {
                $0.hasSuffix(".msg")
            }
            if !kept { try await Task.sleep(for: .milliseconds(100)) }  // polling the data directory, bounded
        }
        #expect(kept, "the pulled message was not kept locally")
        await crashing.stop()
        Carrier.stopPullAfterKeepingForTests = false

        let again = try Pair.node(
            pair.recipientName, root: pair.root, entry: pair.entry, express: pair.express, ports: 45000...45999)
        let events = await again.events()
        try await again.start()
        let received = await Self.offlineTexts(events, from: pair.sender.userId, within: .seconds(12), until: 2)
        #expect(received.map(\.0) == ["exactly once"])
        await again.stop()
        await pair.sender.stop()
        server.stop()
    }
}

final class MessageLog: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [(String, Date)] = []
    func append(_ text: String, _ date: Date) -> Int {
        lock.withLock {
            stored.append((text, date))
            return stored.count
        }
    }
    var items: [(String, Date)] { lock.withLock { stored } }
}

/// A friend request to someone who is offline, from someone who then goes
/// offline too: only Express can carry it.
@Suite(.timeLimit(.minutes(5))) struct ExpressFriendRequestTests {
    @Test func aFriendRequestWaitsOnExpressForAnOfflineAddress() async throws {
        let net = try await TestNetwork.shared()
        let server = try ExpressEndpoint(configuration: .init())
        let requester = try ExpressDeliveryTests.Pair.node(
            "requester", root: net.root, entry: net.entry, express: [server.entry])
        let away = try ExpressDeliveryTests.Pair.node("away", root: net.root, entry: net.entry, express: [server.entry])
        let address = await away.address()
        try await requester.start()
        #expect(await requester.waitUntilReady(timeout: .seconds(60)))
        try await requester.addFriend(address: address.description, hello: "found you on Express")
        await requester.stop()

        let events = await away.events()
        try await away.start()
        let requesterId = requester.userId
        let hello = await events.first(within: .seconds(60)) { event -> String? in
            if case .friendRequest(requesterId, _, _, let hello) = event { return hello }
            return nil
        }
        #expect(hello == "found you on Express")
        await away.stop()
        server.stop()
    }
}
