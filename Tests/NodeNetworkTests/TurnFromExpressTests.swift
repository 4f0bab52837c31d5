import CarrierNode
import CarrierSignaling
import ExpressServer
import Foundation
import RtcCalls
import RtcPeer
import TestSupport
import Testing

/// TURN credentials from the network: an Express node holding coturn's secret
/// hands out time-limited credentials, and calls between friends add them to
/// ICE by themselves. coturn runs on 127.0.0.1 for the test.
@Suite(.serialized, .timeLimit(.minutes(5))) struct TurnFromExpressTests {
    /// A call client on `node`; `relayOnly`: relay candidates only, so its calls connect through TURN or not at all.
    static func client(_ node: Carrier, relayOnly: Bool = true) async throws -> CallClient {
        let provider = try await CarrierSignalingProvider(carrier: node)
        var peer = PeerConfiguration(localAddresses: ["127.0.0.1"])
        peer.relayOnly = relayOnly
        let client = CallClient(
            provider: provider,
            configuration: .init(
                peer: peer, timeouts: .init(ringing: 30, disconnectGrace: 3), mayCall: { await provider.isFriend($0) }))
        await client.start()
        return client
    }

    /// An Express node without TURN says so, and is not asked again for a
    /// while (every call asks: the demo said it four times).
    @Test func anExpressNodeWithoutTurnIsAskedOnce() async throws {
        let express = try ExpressEndpoint(configuration: ExpressService.Configuration())
        var options = CarrierOptions()
        options.loopbackOnly = true
        options.expressNodes = [express.entry]
        let node = try Carrier(options: options)
        func unavailable(_ error: any Error) -> Bool {
            if case .unavailable(let why)? = error as? CarrierError { return why.contains("no TURN") }
            return false
        }
        await #expect(performing: { try await node.turnServerInfo() }, throws: unavailable)
        express.stop()
        // The answer stands without asking: a stopped node would be "unreachable".
        await #expect(performing: { try await node.turnServerInfo() }, throws: unavailable)
        await node.stop()
    }

    @Test func aCallForcedToRelayConnectsWithCredentialsFromExpress() async throws {
        let net = try await TestNetwork.shared()
        let coturn = try await CoturnServer()
        var configuration = ExpressService.Configuration()
        configuration.turn = TurnIssuer(urls: ["turn:127.0.0.1:\(coturn.port)"], secret: coturn.secret)
        let express = try ExpressEndpoint(configuration: configuration)
        let (pair, callee) = try await ExpressDeliveryTests.Pair.make(net, tag: "turn", express: [express.entry])

        let info = try await pair.sender.turnServerInfo()
        #expect(info.urls == ["turn:127.0.0.1:\(coturn.port)"])
        #expect(info.username.hasSuffix(":\(pair.sender.userId)"))
        #expect(try await pair.sender.turnServerInfo() == info, "credentials are reused while fresh")

        let caller = try await Self.client(pair.sender)
        let answerer = try await Self.client(callee)
        let callerEvents = await caller.events()
        let calleeEvents = await answerer.events()
        let root = temporaryDirectory("turn-call")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/relayed.bin"
        try Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 11) }).write(to: URL(fileURLWithPath: file))

        let call = try await caller.makeCall(
            to: callee.userId.description, options: [.audio, .data],
            media: CallMedia(audio: MediaChecks.mediaFile("tone-440-660.wav"), loop: true))
        let incoming = try #require(await CallOverCarrierTests.incoming(calleeEvents))
        try await answerer.accept(incoming.id, media: CallMedia(receiveDirectory: root + "/in"))
        #expect(await CallOverCarrierTests.connected(callerEvents)?.id == call.id)
        let outcome = try await caller.sendFile(file, callId: call.id)
        #expect(outcome.ok && outcome.bytes == 1_000_000)
        #expect(FileManager.default.contentsEqual(atPath: file, andPath: root + "/in/relayed.bin"))
        // Media flows through the relay too (bounded wait for a second of audio).
        var heard = 0.0
        for _ in 0..<100 where heard < 1 {
            heard = (try? await answerer.mediaStats(incoming.id))?.received.first { $0.kind == "audio" }?.seconds ?? 0
            if heard < 1 { try await Task.sleep(for: .milliseconds(100)) }  // polling call stats, bounded
        }
        #expect(heard >= 1, "audio through the relay: \(heard) s")
        try await caller.endCall(call.id)
        await caller.stop()
        await answerer.stop()
        await pair.sender.stop()
        await callee.stop()
        express.stop()
        await coturn.stop()
    }
}
