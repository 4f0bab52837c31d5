import CarrierSignaling
import CarrierWire
import Foundation
import RtcCalls
import RtcPeer
import TestSupport
import Testing

@testable import CarrierNode

/// TURN the Carrier way: a node on a Carrier network derives credentials for
/// its bootstrap node's relay (wire notes §4) and calls use them. A Carrier
/// bootstrap runs a patched coturn that checks the HMAC; here a stock coturn
/// holds the one credential the node will derive (its nonce fixed for the
/// test) as a long-term user in realm elastos.org, so the call proves the
/// name, password and realm reach coturn as it expects them. The relay's own
/// check of the HMAC is CarrierWireTests' (`expectedPassword`).
@Suite(.serialized, .timeLimit(.minutes(5))) struct CarrierTurnTests {
    @Test func aCallForcedToRelayConnectsWithCarrierCredentials() async throws {
        let net = try await TestNetwork.shared()
        let root = temporaryDirectory("carrier-turn")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let nonce = [UInt8](repeating: 0x5A, count: CarrierTurnCredentials.nonceSize)
        let caller = try TestNetwork.peer("turn-caller", root: root, entry: net.entry) { options in
            options.turnFromBootstrap = true
        }
        let expected = try #require(
            CarrierTurnCredentials.derive(
                secretKey: await caller.exportSecretKey(), relayPublicKey: net.entry.publicKey, server: "127.0.0.1",
                nonce: nonce))
        #expect(expected.username.hasPrefix(caller.userId.description + "@") && expected.realm == "elastos.org")
        let coturn = try await CoturnServer(
            staticUser: expected.username, password: expected.password, realm: CarrierTurnCredentials.realm)
        await caller.setCarrierTurnForTests(nonce: nonce, port: coturn.port)
        let callee = try TestNetwork.peer("turn-callee", root: root, entry: net.entry)
        for node in [caller, callee] { try await node.start() }
        try await TestNetwork.befriend(caller, callee)

        let turn = try #require(await caller.carrierTurnServer())
        #expect(turn.urls == ["turn:127.0.0.1:\(coturn.port)"] && turn.username == expected.username)
        #expect(await callee.carrierTurnServer() == nil, "only a node told to derives them")

        // The caller gathers relay candidates only: the call connects through coturn or not at all.
        let calling = try await TurnFromExpressTests.client(caller, relayOnly: true)
        let answering = try await TurnFromExpressTests.client(callee, relayOnly: false)
        let callerEvents = await calling.events()
        let calleeEvents = await answering.events()
        let call = try await calling.makeCall(to: callee.userId.description, options: [.data])
        let incoming = try #require(await CallOverCarrierTests.incoming(calleeEvents))
        try await answering.accept(incoming.id, media: CallMedia())
        #expect(await CallOverCarrierTests.connected(callerEvents)?.id == call.id)
        let stats = try await calling.peerStats(call.id)
        let local = stats.selectedPair?.local ?? ""
        #expect(local.contains("typ relay"), "the pair in use: \(local)")
        try await calling.endCall(call.id)
        await calling.stop()
        await answering.stop()
        for node in [caller, callee] { await node.stop() }
        await coturn.stop()
    }
}
