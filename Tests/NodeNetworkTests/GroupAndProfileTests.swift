import Foundation
import TestSupport
import Testing

@testable import CarrierNode

@Suite(.timeLimit(.minutes(5))) struct GroupAndProfileTests {
    @Test func groupMessageReachesTwoMembers() async throws {
        let net = try await TestNetwork.shared()
        let bobEvents = await net.bob.events()
        let carolEvents = await net.carol.events()
        let group = try await net.alice.createGroup()
        try await net.alice.setGroupTitle("Team", for: group)
        let aliceId = net.alice.userId
        for (node, events) in [(net.bob, bobEvents), (net.carol, carolEvents)] {
            try await net.alice.inviteToGroup(group, friend: node.userId)
            let cookie = await events.first(within: .seconds(30)) { event -> [UInt8]? in
                if case .groupInvite(aliceId, let cookie) = event { return cookie }
                return nil
            }
            let joined = try await node.joinGroup(from: aliceId, cookie: try #require(cookie))
            #expect(joined == group)
        }
        // Members may join before the conference connects: send until both have it.
        let text = Array("hello group \(UUID())".utf8)
        async let toBob = bobEvents.first(within: .seconds(30)) { event -> UserId? in
            if case .groupMessage(group, let from, text) = event { return from }
            return nil
        }
        async let toCarol = carolEvents.first(within: .seconds(30)) { event -> UserId? in
            if case .groupMessage(group, let from, text) = event { return from }
            return nil
        }
        let alice = net.alice
        let sender = Task {
            for _ in 0..<60 {
                if try await alice.groupPeers(group).count >= 3 { break }
                try await Task.sleep(for: .milliseconds(250))
            }
            try await alice.sendGroupMessage(text, to: group)
        }
        try await sender.value
        #expect(await toBob == aliceId)
        #expect(await toCarol == aliceId)
        #expect(try await net.bob.groupTitle(group) == "Team")
        let peers = try await net.alice.groupPeers(group).map(\.userId)
        #expect(Set(peers) == [aliceId, net.bob.userId, net.carol.userId])
    }

    @Test func profileAndPresenceReachFriends() async throws {
        let net = try await TestNetwork.shared()
        let events = await net.bob.events()
        var info = UserInfo()
        info.name = "Alice"
        info.description = "test peer"
        info.client = .init(protoVersion: 2, platform: "linux", osVersion: "debian", appVersion: "test")
        info.profile = .init(avatarUrl: "", url: "https://example.org", ens: "alice.eth", extra: "")
        try await net.alice.setUserInfo(info)
        try await net.alice.setPresence(.away)
        let aliceId = net.alice.userId
        let seen = await events.first(within: .seconds(30)) { event -> UserInfo? in
            if case .friendInfo(aliceId, let received) = event, received.name == "Alice" { return received }
            return nil
        }
        #expect(seen == info)
        #expect(await net.alice.userInfo() == info)
        #expect(await net.bob.friendInfo(aliceId)?.info == info)
        let presence = await events.first(within: .seconds(30)) { event -> Presence? in
            if case .friendPresence(aliceId, .away) = event { return .away }
            return nil
        }
        let current = await net.bob.friendInfo(aliceId)?.presence
        #expect(presence == .away || current == .away)
        try await net.alice.setPresence(.none)
    }

    @Test func labelsAndFriendListAreKept() async throws {
        let net = try await TestNetwork.shared()
        try await net.alice.setLabel("Bobby", for: net.bob.userId)
        let list = await net.alice.friendList()
        // Other tests may add friends to Alice meanwhile; Bob and Carol stay.
        let bob = try #require(list.first { $0.userId == net.bob.userId })
        let carol = try #require(list.first { $0.userId == net.carol.userId })
        #expect(bob.label == "Bobby" && bob.connected)
        #expect(carol.label == "" && carol.connected)
    }
}
