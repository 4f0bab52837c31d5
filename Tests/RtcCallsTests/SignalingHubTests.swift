import RtcCalls
import Synchronization
import TestSupport
import Testing

/// One provider shared by several taps: each call's signals reach the tap
/// that placed it, new calls reach the answering tap, closed taps are forgotten.
@Suite struct SignalingHubTests {
    /// How long a tap's signals may take to arrive. They come in
    /// milliseconds, but the units group starts many suites at once on two
    /// cores, and its start has held Swift's cooperative pool for seconds: a
    /// 5 s wait failed there (CI, 2026-12-05, the test "passed" its other
    /// waits after 11.8 s). The wait only bounds a failure, so it can be long.
    static let delivery = Duration.seconds(30)

    /// What one tap has received: the callIds of its signals, in order.
    final class Received: Sendable {
        let callIds = Mutex<[String]>([])
        var all: [String] { callIds.withLock { $0 } }

        init(_ tap: SignalingHub.Tap) async {
            let inputs = await tap.inputs()
            Task { [self] in
                for await input in inputs {
                    if case .signal(let signal, _) = input { callIds.withLock { $0.append(signal.callId ?? "-") } }
                }
            }
        }
    }

    func from(_ bob: InMemorySignaling, _ callId: String?, _ type: RtcSignal.SignalType = .answer) async throws {
        try await bob.send(RtcSignal(type: type, sdp: "v=0", callId: callId), to: "alice")
    }

    @Test func routesEachCallToTheTapThatPlacedIt() async throws {
        let network = InMemorySignaling.network(["alice", "bob"])
        let (alice, bob) = (try #require(network["alice"]), try #require(network["bob"]))
        let hub = SignalingHub(alice)
        let answering = await hub.tap(answering: true)
        let dialer = await hub.tap()
        let other = await hub.tap()
        let (toAnswering, toDialer, toOther) = (
            await Received(answering), await Received(dialer), await Received(other)
        )

        try await dialer.send(RtcSignal(type: .offer, sdp: "v=0", callId: "Call-1"), to: "bob")
        try await other.send(RtcSignal(type: .offer, sdp: "v=0", callId: "call-2"), to: "bob")
        try await from(bob, "call-1")  // the letter case does not matter
        try await from(bob, "CALL-2")
        try await from(bob, "call-3", .offer)  // a call nobody here placed
        try await from(bob, nil, .offer)
        // Each tap's signals reach it on a task of its own: wait for all three.
        #expect(
            await eventually(within: Self.delivery) {
                toAnswering.all.count == 2 && toDialer.all.count == 1 && toOther.all.count == 1
            })
        #expect(toDialer.all == ["call-1"])
        #expect(toOther.all == ["CALL-2"])
        #expect(toAnswering.all == ["call-3", "-"])
        #expect(await hub.routedCalls == 2)

        // A closed tap's calls are forgotten: a late signal of its call goes to the answering tap.
        await dialer.close()
        #expect(await hub.routedCalls == 1)
        try await from(bob, "call-1")
        #expect(await eventually(within: Self.delivery) { toAnswering.all.count == 3 })
        #expect(toDialer.all == ["call-1"])
        await hub.stop()
    }

    @Test func withoutAnAnsweringTapAPeersUnknownCallGoesToTheNewestTapThatSignaledIt() async throws {
        let network = InMemorySignaling.network(["alice", "bob", "carol"])
        let (alice, bob, carol) = (
            try #require(network["alice"]), try #require(network["bob"]), try #require(network["carol"])
        )
        let hub = SignalingHub(alice)
        let first = await hub.tap()
        let second = await hub.tap()
        let (toFirst, toSecond) = (await Received(first), await Received(second))
        try await first.send(RtcSignal(type: .offer, sdp: "v=0", callId: "a"), to: "bob")
        try await second.send(RtcSignal(type: .offer, sdp: "v=0", callId: "b"), to: "bob")
        // Glare: bob dials at the same moment with his own callId; it meets the newest dialer.
        try await from(bob, "bob-call", .offer)
        try await from(bob, "a")
        #expect(await eventually(within: Self.delivery) { toFirst.all == ["a"] && toSecond.all.count == 1 })
        #expect(toSecond.all == ["bob-call"])
        // Nobody here signaled carol and nobody answers: her call is dropped.
        try await carol.send(RtcSignal(type: .offer, sdp: "v=0", callId: "c"), to: "alice")
        try await from(bob, "b")
        #expect(await eventually(within: Self.delivery) { toSecond.all == ["bob-call", "b"] })
        #expect(toFirst.all == ["a"])
        await hub.stop()
    }
}
