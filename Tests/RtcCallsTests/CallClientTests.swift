import Foundation
import RtcCalls
import RtcPeer
import TestSupport
import Testing

/// Two call clients joined by in-memory signaling, with real peer
/// connections on 127.0.0.1.
@Suite(.serialized) struct CallClientTests {
    static let loopback = PeerConfiguration(localAddresses: ["127.0.0.1"])

    struct Pair {
        let alice: CallClient
        let bob: CallClient
        let aliceSignals: InMemorySignaling
        let bobSignals: InMemorySignaling

        init(timeouts: CallMachine.Timeouts = .init()) async {
            (aliceSignals, bobSignals) = InMemorySignaling.pair("alice", "bob")
            alice = CallClient(
                provider: aliceSignals, configuration: .init(peer: CallClientTests.loopback, timeouts: timeouts))
            bob = CallClient(
                provider: bobSignals, configuration: .init(peer: CallClientTests.loopback, timeouts: timeouts))
            await alice.start()
            await bob.start()
        }
    }

    static func next<T: Sendable>(
        _ events: AsyncStream<CallEvent>, within: Duration = .seconds(10),
        _ match: @escaping @Sendable (CallEvent) -> T?
    ) async -> T? {
        await events.first(within: within, match)
    }

    @Test func aCallConnectsCarriesAFileAndHangsUp() async throws {
        let pair = await Pair()
        let bobEvents = await pair.bob.events()
        let aliceEvents = await pair.alice.events()
        let root = temporaryDirectory("call-file")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/hello.bin"
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 * 7) }).write(to: URL(fileURLWithPath: file))

        let call = try await pair.alice.makeCall(to: "bob", options: [.audio, .data])
        let incoming = try #require(await Self.next(bobEvents) { if case .incoming(let c) = $0 { c } else { nil } })
        #expect(incoming.id == call.id && incoming.peer == "alice" && incoming.options.contains(.data))
        try await pair.bob.accept(incoming.id, media: CallMedia(receiveDirectory: root + "/in"))
        let connected = await Self.next(aliceEvents) { event -> Call? in
            if case .stateChanged(let c) = event, c.state == .connected { return c }
            return nil
        }
        #expect(connected?.id == call.id)
        // Both ends are this stack: the binary fast path, acknowledged with the receiver's hash.
        let outcome = try await pair.alice.sendFile(file, callId: call.id)
        #expect(outcome.ok && outcome.bytes == 300_000)
        let received = await Self.next(bobEvents) { if case .fileReceived(_, let o) = $0 { o } else { nil } }
        #expect(received?.ok == true && received?.path == root + "/in/hello.bin")

        try await pair.alice.endCall(call.id)
        let ended = await Self.next(bobEvents) { if case .ended(let c) = $0 { c } else { nil } }
        #expect(ended?.endReason == .remoteHangUp)
        let ours = await Self.next(aliceEvents) { if case .ended(let c) = $0 { c } else { nil } }
        #expect(ours?.endReason == .hangUp && ours?.duration ?? 0 > 0)
        #expect(await pair.alice.call(call.id)?.state == .ended)
    }
}
