import Foundation
import RtcSCTP
import TestSupport
import Testing

@testable import RtcPeer

/// Two peer connections whose every packet passes through a `UdpRelay`:
/// A (the offerer) and B see each other only at the relay's mappings.
struct RelayedCall {
    let offerer: PeerConnection
    let answerer: PeerConnection
    let relay: UdpRelay

    init() throws {
        offerer = try PeerConnection(configuration: LoopbackCall.loopback)
        answerer = try PeerConnection(configuration: LoopbackCall.loopback)
        relay = try UdpRelay()
    }

    /// Connects with a data channel; both ends once it is open (nil on failure).
    func connectWithChannel() async throws -> (local: DataChannel, remote: DataChannel)? {
        let channel = await offerer.createDataChannel(DataChannelParameters(label: "data"))
        let answererEvents = await answerer.events()
        let remoteChannel = Task {
            await answererEvents.first(within: .seconds(10)) { event -> DataChannel? in
                if case .dataChannel(let channel) = event { return channel }
                return nil
            }
        }
        let trickling = await startTrickling()
        defer { for task in trickling { task.cancel() } }
        try await negotiate(iceRestart: false)
        guard await LoopbackCall.connected(offerer), await LoopbackCall.connected(answerer),
            await channel.events.first(within: .seconds(10), { $0 == .open ? true : nil }) == true,
            let remote = await remoteChannel.value
        else { return nil }
        return (channel, remote)
    }

    /// Passes each side's trickled candidates to the other through the relay;
    /// subscribed before it returns, so no candidate is missed.
    func startTrickling() async -> [Task<Void, Never>] {
        let fromOfferer = await offerer.events()
        let fromAnswerer = await answerer.events()
        return [
            Task { [relay, answerer] in await Self.trickle(fromOfferer, from: .a, to: answerer, relay) },
            Task { [relay, offerer] in await Self.trickle(fromAnswerer, from: .b, to: offerer, relay) },
        ]
    }

    /// One offer/answer from the offerer, candidates in the descriptions rewritten.
    func negotiate(iceRestart: Bool) async throws {
        let offer = try await offerer.createOffer(iceRestart: iceRestart)
        try await offerer.setLocalDescription(offer)
        let offerText = await offerer.currentLocalDescription() ?? offer
        try await answerer.setRemoteDescription(relay.rewriteDescription(offerText, from: .a), type: .offer)
        let answer = try await answerer.createAnswer()
        try await answerer.setLocalDescription(answer)
        let answerText = await answerer.currentLocalDescription() ?? answer
        try await offerer.setRemoteDescription(relay.rewriteDescription(answerText, from: .b), type: .answer)
    }

    static func trickle(
        _ events: AsyncStream<PeerEvent>, from side: UdpRelay.Side, to target: PeerConnection, _ relay: UdpRelay
    ) async {
        for await event in events {
            if case .localCandidate(let candidate, _, _) = event {
                try? await target.addIceCandidate(relay.rewrite(candidate, from: side))
            }
        }
    }

    func close() async {
        await offerer.close()
        await answerer.close()
        relay.stop()
    }
}

@Suite(.serialized) struct NetworkFaultTests {
    @Test func theRelayCarriesACall() async throws {
        let call = try RelayedCall()
        let (channel, remote) = try #require(try await call.connectWithChannel())
        try channel.send("through the relay")
        #expect(await remote.nextText() == "through the relay")
        let pair = await call.offerer.stats().selectedPair
        #expect(pair?.remote.contains(" \(call.relay.mappedPort(of: .b)) ") == true)
        #expect(call.relay.currentCounts.forwarded > 0)
        await call.close()
    }

    /// A blackout longer than consent (libnice: 10 s) costs ICE its pair:
    /// the connection is then disconnected, not failed, DTLS and SCTP keep
    /// their sessions, and an ICE restart brings the same channel back.
    @Test func consentLostInABlackoutIsRecoveredByAnIceRestart() async throws {
        let call = try RelayedCall()
        let (channel, remote) = try #require(try await call.connectWithChannel())
        let events = await call.offerer.events()
        call.relay.blackout(for: 11)
        let blackoutEnds = ContinuousClock.now + .seconds(11)
        let lost = await events.first(within: .seconds(15)) { event -> PeerConnectionState? in
            if case .connectionStateChanged(let state) = event { return state }
            return nil
        }
        #expect(lost == .disconnected)
        #expect(await call.offerer.stats().connectionLosses == 1)
        try await Task.sleep(until: blackoutEnds)  // the fault's length, not a wait for an event
        let trickling = await call.startTrickling()
        defer { for task in trickling { task.cancel() } }
        try await call.negotiate(iceRestart: true)
        #expect(await LoopbackCall.connected(call.offerer))
        try channel.send("after the blackout")
        #expect(await remote.nextText() == "after the blackout")
        await call.close()
    }
}
