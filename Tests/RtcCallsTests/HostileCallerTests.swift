import RtcCalls
import RtcPeer
import TestSupport
import Testing

/// A caller that plays the attacker with raw signals: call ids meant to
/// become paths, and more offers than a node should build connections for.
@Suite struct HostileCallerTests {
    static let loopback = PeerConfiguration(localAddresses: ["127.0.0.1"])

    static func offer(_ callId: String) -> RtcSignal {
        RtcSignal(type: .offer, sdp: SyntheticSDP.offer(sections: 1), options: [.audio], callId: callId)
    }

    /// The byes a raw peer receives, by call id.
    static func bye(_ inputs: AsyncStream<SignalingInput>, for callId: String) async -> RtcSignal.Reason? {
        await inputs.first(within: .seconds(20)) { input -> RtcSignal.Reason? in
            guard case .signal(let signal, _) = input, signal.type == .bye, signal.callId == callId else { return nil }
            return signal.reason ?? .unknown
        }
    }

    /// The attack: an offer whose callId walks out of the recording
    /// folder. It never becomes a call, and the caller hears a bye.
    @Test func aCallIdThatIsAPathIsRefusedWithABye() async throws {
        let (mallory, bobSignals) = InMemorySignaling.pair("mallory", "bob")
        let bob = CallClient(provider: bobSignals, configuration: .init(peer: Self.loopback))
        await bob.start()
        let events = await bob.events()
        let replies = await mallory.inputs()
        for hostile in ["../../../x/pwned", "a/b", String(repeating: "a", count: 65), "x\u{1B}[2J"] {
            try await mallory.send(Self.offer(hostile), to: "bob")
            #expect(await Self.bye(replies, for: hostile) == .error, "\(hostile.debugDescription)")
        }
        let bad = await events.first(within: .seconds(5)) { event -> String? in
            if case .badSignal(let from, let error) = event { "\(from): \(error)" } else { nil }
        }
        #expect(bad?.hasPrefix("mallory: signal: a callId of 16 bytes that is not UUID-like") == true)
        #expect(await bob.activeCalls.isEmpty)
        #expect(await bob.refusedCalls == 4)
        await bob.stop()
    }

    /// An offer builds no peer connection until it is accepted: one refused,
    /// or left ringing, costs no certificate, ICE agent or socket.
    @Test func anOfferBuildsNothingUntilItIsAccepted() async throws {
        let (mallory, bobSignals) = InMemorySignaling.pair("mallory", "bob")
        let bob = CallClient(provider: bobSignals, configuration: .init(peer: Self.loopback))
        await bob.start()
        let events = await bob.events()
        let replies = await mallory.inputs()
        for index in 0..<3 {
            let id = "00000000-0000-4000-8000-00000000000\(index)"
            try await mallory.send(Self.offer(id), to: "bob")
            #expect(
                await events.first(within: .seconds(20)) { if case .incoming(let c) = $0 { c.id } else { nil } } == id)
        }
        let ringing = await bob.activeCalls.count
        #expect(bob.peerConnectionsMade == 0 && ringing == 3)
        try await bob.reject("00000000-0000-4000-8000-000000000000")
        #expect(await Self.bye(replies, for: "00000000-0000-4000-8000-000000000000") == .declined)
        #expect(bob.peerConnectionsMade == 0)
        try await bob.accept("00000000-0000-4000-8000-000000000001")
        let answered = await replies.first(within: .seconds(20)) { input -> Bool? in
            guard case .signal(let signal, _) = input, signal.type == .answer else { return nil }
            return signal.callId == "00000000-0000-4000-8000-000000000001"
        }
        #expect(answered == true && bob.peerConnectionsMade == 1)
        await bob.stop()
    }

    /// Offers past the per-peer and per-node bounds are refused as busy
    /// before a peer connection is built; other peers still get through
    /// until the node's bound.
    @Test func offersPastTheBoundsAreRefusedAsBusy() async throws {
        let providers = InMemorySignaling.network(["mallory", "carol", "dave", "bob"])
        let (mallory, carol, dave, bobSignals) = try (
            #require(providers["mallory"]), #require(providers["carol"]), #require(providers["dave"]),
            #require(providers["bob"])
        )
        var configuration = CallClient.Configuration(peer: Self.loopback)
        (configuration.maxCalls, configuration.maxCallsPerPeer) = (2, 1)
        let bob = CallClient(provider: bobSignals, configuration: configuration)
        await bob.start()
        let events = await bob.events()
        let fromMallory = await mallory.inputs()
        let fromDave = await dave.inputs()
        let first = "11111111-1111-4111-8111-111111111111"
        try await mallory.send(Self.offer(first), to: "bob")
        #expect(
            await events.first(within: .seconds(20)) { if case .incoming(let c) = $0 { c.id } else { nil } } == first)

        let second = "22222222-2222-4222-8222-222222222222"
        try await mallory.send(Self.offer(second), to: "bob")
        #expect(await Self.bye(fromMallory, for: second) == .busy)

        let third = "33333333-3333-4333-8333-333333333333"
        try await carol.send(Self.offer(third), to: "bob")
        #expect(
            await events.first(within: .seconds(20)) { if case .incoming(let c) = $0 { c.id } else { nil } } == third)

        let fourth = "44444444-4444-4444-8444-444444444444"
        try await dave.send(Self.offer(fourth), to: "bob")
        #expect(await Self.bye(fromDave, for: fourth) == .busy)
        #expect(Set(await bob.activeCalls) == [first, third])
        #expect(await bob.refusedCalls == 2)
        await bob.stop()
    }
}
