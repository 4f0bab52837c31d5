import CarrierWire
import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// Real toxcore nodes on 127.0.0.1 (slow suite: the shared network takes ~20 s to form).
@Suite(.timeLimit(.minutes(5))) struct MessagingTests {
    @Test func messageArrivesWithADeliveredReceipt() async throws {
        let net = try await TestNetwork.shared()
        let inbox = await net.bob.events()
        let text = "hello bob \(UUID().uuidString)"
        let aliceId = net.alice.userId
        // Read while the message is on its way (as the bulk test does): the
        // other suites' traffic to Bob fills his event streams meanwhile.
        async let arrived = inbox.first(within: .seconds(60)) { event -> String? in
            if case .message(let from, nil, let data, _, _) = event, from == aliceId,
                String(decoding: data, as: UTF8.self) == text
            {
                return text
            }
            return nil
        }
        let receipt = try await net.alice.deliverMessage(Array(text.utf8), to: net.bob.userId.description)
        #expect(receipt == .delivered)
        let received = await arrived
        #expect(received == text)
    }

    @Test func fiveMegabyteBulkMessageArrivesIntact() async throws {
        let net = try await TestNetwork.shared()
        let inbox = await net.bob.events()
        let payload = randomBytes(Carrier.maxMessageSize)
        let aliceId = net.alice.userId
        async let arrived = inbox.first(within: .seconds(120)) { event -> [UInt8]? in
            if case .message(let from, nil, let data, _, _) = event, from == aliceId, data.count == payload.count {
                return data
            }
            return nil
        }
        let started = ContinuousClock.now
        let receipt = try await net.alice.deliverMessage(payload, to: net.bob.userId.description)
        #expect(receipt == .delivered)
        let data = await arrived
        print("5 MB bulk message took \(ContinuousClock.now - started)")  // for the issue note, not asserted
        #expect(data == payload)
    }

    @Test func receiptsComeAsEventsForFireAndForgetSends() async throws {
        let net = try await TestNetwork.shared()
        let events = await net.alice.events()
        let id = try await net.alice.sendMessage(Array("ping".utf8), to: net.carol.userId.description)
        let state = await events.first(within: .seconds(30)) { event -> ReceiptState? in
            if case .receipt(id, _, let state) = event { return state }
            return nil
        }
        #expect(state == .delivered)
    }

    @Test func badInputIsATypedErrorAndNothingIsSent() async throws {
        let net = try await TestNetwork.shared()
        let bob = net.bob.userId.description
        await #expect(throws: CarrierError.tooLong("a message is at most 5242880 bytes, this one is 5242881")) {
            try await net.alice.sendMessage(randomBytes(Carrier.maxMessageSize + 1), to: bob)
        }
        await #expect(throws: CarrierError.self) { try await net.alice.sendMessage([], to: bob) }
        await #expect(throws: CarrierError.invalidUserId("nope")) { try await net.alice.sendMessage([1], to: "nope") }
        let stranger = try #require(UserId(publicKey: randomBytes(32)))
        await #expect(throws: CarrierError.notFriend(stranger.description)) {
            try await net.alice.sendMessage([1], to: stranger.description)
        }
        await #expect(throws: CarrierError.self) { try await net.alice.sendInvite(randomBytes(8193), to: bob) }
        await #expect(throws: CarrierError.self) {
            try await net.alice.sendMessage([1], to: bob + ":" + String(repeating: "x", count: 32))
        }
        await #expect(throws: CarrierError.invalidAddress("abc")) {
            try await net.alice.addFriend(address: "abc", hello: "hi")
        }
        await #expect(throws: CarrierError.self) {
            try await net.alice.addFriend(address: await net.alice.address().description, hello: "me")
        }
    }

    @Test func aRequestFromANonFriendCarryingAnInviteIsDropped() async throws {
        let net = try await TestNetwork.shared()
        // Carol is not Bob's friend; she smuggles an invite packet into a friend request.
        let events = await net.bob.events()
        let before = await net.bob.stats().malformedPackets
        let smuggled = CarrierPacket.inviteRequest(.init(ext: "carrier", tid: 1, totalSize: 3, data: [1, 2, 3]))
            .encode()
        try await net.carol.sendFriendRequest(address: await net.bob.address(), payload: smuggled)
        let carolId = net.carol.userId
        let reason = await events.first(within: .seconds(60)) { event -> String? in
            if case .dropped(carolId?, let reason) = event { return reason }
            if case .friendRequest(carolId, _, _, _) = event { return "delivered as a request" }
            return nil
        }
        #expect(reason == "friend request that is not a friend request packet")
        #expect(await net.bob.stats().malformedPackets == before + 1)
        #expect(await !net.bob.isFriend(carolId))
    }
}
