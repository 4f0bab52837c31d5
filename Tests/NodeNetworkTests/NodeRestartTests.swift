import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// A node gets back on the network by itself (`OfflineRecovery`; the soak
/// `scripts/soak_callers.py` drives it through callers that come and go).
@Suite(.serialized, .timeLimit(.minutes(3))) struct NodeRestartTests {
    /// toxcore started afresh (`restartTox`): the same identity and friends,
    /// a new DHT key; the friend link comes back, and an invite that was
    /// waiting for its reply is answered.
    @Test func aFreshToxcoreKeepsTheIdentityAndFriends() async throws {
        let net = try await TestNetwork.shared()
        let node = try TestNetwork.peer("fresh-\(UUID().uuidString.prefix(6))", root: net.root, entry: net.entry)
        try await node.start()
        #expect(await node.waitUntilReady(timeout: .seconds(60)))
        try await TestNetwork.befriend(node, net.carol)
        let address = await node.address()
        let dhtKey = await node.dhtKey()
        let events = await node.events()
        let inbox = await net.carol.events()
        let bytes = Array("across a restart \(UUID())".utf8)
        await net.carol.loseNextInvite(carrying: bytes)  // so that it waits for its reply across the restart
        try await node.postInvite(bytes, to: net.carol.userId.description) { _ in }
        await node.restartTox(reason: "a test")
        #expect(await node.address() == address)
        #expect(await node.dhtKey() != dhtKey)
        #expect(await node.friendList().map(\.userId) == [net.carol.userId])
        #expect(await node.stats().restarts == 1)
        let restarted = await events.first(within: .seconds(5)) { event -> String? in
            if case .toxRestarted(let reason) = event { return reason }
            return nil
        }
        #expect(restarted == "a test")
        #expect(await node.waitUntilConnected(to: net.carol.userId, timeout: .seconds(60)))
        let invite = await inbox.first(within: .seconds(30)) { event -> IncomingInvite? in
            if case .inviteRequest(let invite) = event, invite.data == bytes { return invite }
            return nil
        }
        #expect(invite != nil)
        await node.stop()
    }
}
