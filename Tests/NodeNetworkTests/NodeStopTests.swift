import ExpressServer
import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// A node stopped at any point of its life never touches the toxcore it
/// freed, from any task: stopped while joining, as soon as it is on the
/// network (its Express pull and friend link starting), with an invite and a
/// message out, and mid-file-transfer; each time with other tasks calling into
/// it while it stops, and a second stop racing the first. `make test` runs
/// this suite under AddressSanitizer too, where a use after free would abort.
/// (An Express pull that came back after `stop` read the freed instance:
/// `carrier friend add` crashed in 4 of 7 runs in the network lab.)
@Suite(.serialized, .timeLimit(.minutes(8))) struct NodeStopTests {
    enum Point: CaseIterable {
        case joining, justOnline, inviteAndMessageOut, midTransfer
    }

    @Test func aNodeStoppedAtAnyPointOfItsLifeLeavesToxcoreAlone() async throws {
        let net = try await TestNetwork.shared()
        let database = NSTemporaryDirectory() + "carrier-stop-\(UUID().uuidString).db"
        defer { try? FileManager.default.removeItem(atPath: database) }
        let express = try ExpressEndpoint(configuration: .init(databasePath: database))
        defer { express.stop() }
        let root = net.root + "/stop-\(UUID().uuidString.prefix(8))"
        var options = CarrierOptions(dataDirectory: root, bootstrapNodes: [net.entry])
        options.loopbackOnly = true
        options.expressNodes = [express.entry]
        // Befriended once; every round starts the same identity again, on fresh ports.
        let first = try Carrier(options: options)
        try await first.start()
        #expect(await first.waitUntilReady(timeout: .seconds(60)))
        try await TestNetwork.befriend(first, net.alice)
        await first.stop()
        let file = NSTemporaryDirectory() + "carrier-stop-\(UUID().uuidString).bin"
        _ = FileManager.default.createFile(atPath: file, contents: Data(randomBytes(4 << 20)))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let inbox = NSTemporaryDirectory() + "carrier-stop-in-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: inbox) }
        let rounds = Int(ProcessInfo.processInfo.environment["STOP_ROUNDS"] ?? "") ?? 2
        var port: UInt16 = 42000
        for round in 0..<rounds {
            for point in Point.allCases {
                options.udpPorts = port...(port + 99)
                port = port >= 44800 ? 42000 : port + 100
                let node = try Carrier(options: options)
                try await node.start()
                try await Self.reach(point, node: node, friend: net.alice, file: file, inbox: inbox)
                // Others call in while it stops; a second stop races the first.
                let callers = Task {
                    for _ in 0..<50 {
                        _ = await node.address()
                        _ = await node.friendList()
                        _ = await node.groups()
                        _ = await node.stats()
                        _ = await node.udpPort()
                        _ = try? await node.sendMessage([1], to: net.alice.userId.description)
                        try? await node.postInvite([2], to: net.alice.userId.description) { _ in }
                        await Task.yield()
                    }
                }
                async let second: Void = node.stop()
                await node.stop()
                await second
                await callers.value
                #expect(await node.address().userId == node.userId, "round \(round), \(point)")
                await #expect(throws: CarrierError.notRunning) { try await node.setNospam(7) }
            }
        }
    }

    /// Brings the node to `point` (bounded waits; a point not reached is
    /// still a point to stop at).
    static func reach(_ point: Point, node: Carrier, friend: Carrier, file: String, inbox: String) async throws {
        let friendId = friend.userId
        switch point {
        case .joining:
            return
        case .justOnline:
            _ = await node.waitUntilReady(timeout: .seconds(30))
        case .inviteAndMessageOut:
            guard await node.waitUntilConnected(to: friendId, timeout: .seconds(60)) else { return }
            try await node.postInvite(Array("are you there".utf8), to: friendId.description) { _ in }
            _ = try await node.sendMessage(Array("hello".utf8), to: friendId.description)
        case .midTransfer:
            guard await node.waitUntilConnected(to: friendId, timeout: .seconds(60)) else { return }
            let offers = await friend.events()
            let ours = await node.events()
            let nodeId = node.userId
            let accepting = Task {
                let offer = await offers.first(within: .seconds(20)) { event -> FileOffer? in
                    guard case .file(.offered(let offer)) = event, offer.key.friend == nodeId else { return nil }
                    return offer
                }
                if let offer { try? await friend.acceptFile(offer.key, into: inbox) }
            }
            _ = try await node.sendFile(at: file, to: friendId)
            // Stopped once bytes are moving.
            _ = await ours.first(within: .seconds(20)) { event -> Bool? in
                if case .file(.progress) = event { return true }
                return nil
            }
            accepting.cancel()
        }
    }
}
