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

    /// A friend that left, and one waited for that stays away, has its
    /// toxcore link started afresh (`FriendLinkRefresh`: gone 5 s; waited for
    /// 2 s here, then 4 s): it is taken out of toxcore and put back, keeps its
    /// label and user info, and connects when it comes back as a new process.
    @Test func aFriendGoneOrWaitedForIsPutBackIntoToxcoreAndStillConnects() async throws {
        let net = try await TestNetwork.shared()
        let tag = UUID().uuidString.prefix(6)
        let waiter = try TestNetwork.peer("waiter-\(tag)", root: net.root, entry: net.entry) {
            $0.friendLinkRefreshAfter = .seconds(2)
        }
        var away = try TestNetwork.peer("away-\(tag)", root: net.root, entry: net.entry)
        try await waiter.start()
        try await away.start()
        #expect(await waiter.waitUntilReady(timeout: .seconds(60)))
        #expect(await away.waitUntilReady(timeout: .seconds(60)))
        var info = UserInfo()
        info.name = "away"
        try await away.setUserInfo(info)
        try await TestNetwork.befriend(waiter, away)
        let awayId = away.userId
        try await waiter.setLabel("the one away", for: awayId)
        #expect(await eventually(within: .seconds(30)) { await waiter.friendInfo(awayId)?.info.name == "away" })
        let events = await waiter.events()
        await away.stop()
        let left = await events.first(within: .seconds(60)) { event -> Bool? in
            if case .friendConnection(awayId, connected: false) = event { return true }
            return nil
        }
        #expect(left == true)
        // Gone 5 s: started afresh once, with nobody waiting for it.
        #expect(await eventually(within: .seconds(15)) { await waiter.stats().friendLinkRestarts == 1 })
        // Waited for: again after 2 s, then 4 s.
        #expect(await waiter.waitUntilConnected(to: awayId, timeout: .seconds(7)) == false)
        #expect(await waiter.stats().friendLinkRestarts >= 3)
        let kept = await waiter.friendInfo(awayId)
        #expect(kept?.label == "the one away" && kept?.info.name == "away")

        away = try TestNetwork.peer("away-\(tag)", root: net.root, entry: net.entry)
        try await away.start()
        #expect(await waiter.waitUntilConnected(to: awayId, timeout: .seconds(90)))
        #expect(await away.waitUntilConnected(to: waiter.userId, timeout: .seconds(90)))
        await away.stop()
        await waiter.stop()
    }
}
