import CarrierNode
import CarrierSignaling
import Foundation
import RtcCalls
import RtcMediaFiles
import RtcPeer
import TestSupport
import Testing

/// Calls between friends on the local toxcore network: signals travel as
/// invites to `friend:carrier`, media and files over WebRTC on 127.0.0.1.
@Suite(.serialized, .timeLimit(.minutes(5))) struct CallOverCarrierTests {
    struct Clients {
        let caller: CallClient
        let callee: CallClient
        let callerEvents: AsyncStream<CallEvent>
        let calleeEvents: AsyncStream<CallEvent>

        init(_ caller: Carrier, _ callee: Carrier, ringing: Double = 45) async throws {
            self.caller = try await Self.client(caller, ringing: ringing)
            self.callee = try await Self.client(callee, ringing: ringing)
            callerEvents = await self.caller.events()
            calleeEvents = await self.callee.events()
        }

        static func client(_ node: Carrier, ringing: Double) async throws -> CallClient {
            let provider = try await CarrierSignalingProvider(carrier: node)
            let client = CallClient(
                provider: provider,
                configuration: .init(
                    peer: PeerConfiguration(localAddresses: ["127.0.0.1"]),
                    timeouts: .init(ringing: ringing, disconnectGrace: 3), mayCall: { await provider.isFriend($0) }))
            await client.start()
            return client
        }

        func stop() async {
            await caller.stop()
            await callee.stop()
        }
    }

    static func next<T: Sendable>(_ events: AsyncStream<CallEvent>, _ match: @escaping @Sendable (CallEvent) -> T?)
        async -> T?
    {
        await events.first(within: .seconds(30), match)
    }

    static func incoming(_ events: AsyncStream<CallEvent>) async -> Call? {
        await next(events) { if case .incoming(let c) = $0 { c } else { nil } }
    }

    static func ended(_ events: AsyncStream<CallEvent>) async -> Call? {
        await next(events) { if case .ended(let c) = $0 { c } else { nil } }
    }

    static func connected(_ events: AsyncStream<CallEvent>) async -> Call? {
        await next(events) { event -> Call? in
            if case .stateChanged(let c) = event, c.state == .connected { return c }
            return nil
        }
    }

    @Test func friendsCallWithAudioVideoAndAFile() async throws {
        let net = try await TestNetwork.shared()
        let clients = try await Clients(net.alice, net.bob)
        defer { Task { await clients.stop() } }
        let root = temporaryDirectory("carrier-call")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/photo.bin"
        try Data((0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: URL(fileURLWithPath: file))

        let started = ContinuousClock.now
        let call = try await clients.caller.makeCall(
            to: net.bob.userId.description, options: [.audio, .video, .data],
            media: CallMedia(
                audio: MediaChecks.mediaFile("tone-440-660.wav"), video: MediaChecks.mediaFile("testsrc.y4m"),
                loop: true))
        let incoming = try #require(await Self.incoming(clients.calleeEvents))
        #expect(incoming.id == call.id && incoming.peer == net.alice.userId.description)
        #expect(incoming.options == [.audio, .video, .data])
        try await clients.callee.accept(
            incoming.id, media: CallMedia(recordDirectory: root + "/rec", receiveDirectory: root + "/in"))
        #expect(await Self.connected(clients.callerEvents)?.id == call.id)
        print("call over Carrier connected in \(ContinuousClock.now - started)")  // for the notes

        let outcome = try await clients.caller.sendFile(file, callId: call.id)
        #expect(outcome.ok && outcome.bytes == 2_000_000)
        #expect(FileManager.default.contentsEqual(atPath: file, andPath: root + "/in/photo.bin"))
        try await Task.sleep(for: .seconds(2))  // media flowing for a while
        try await clients.caller.endCall(call.id)
        let ended = await Self.ended(clients.calleeEvents)
        #expect(ended?.endReason == .remoteHangUp)
        let stats = try await clients.callee.mediaStats(call.id)
        let audio = try #require(stats.received.first { $0.kind == "audio" })
        let video = try #require(stats.received.first { $0.kind == "video" })
        #expect(audio.seconds > 1.5 && video.framesDecoded > 20)
        let recorded = try WavFile(path: root + "/rec/audio.wav").audio
        #expect(MediaChecks.tonePower(recorded, channel: 0, frequency: 440, skipSeconds: 0.5) > 0.7)
    }

    @Test func rejectBusyAndNoAnswer() async throws {
        let net = try await TestNetwork.shared()
        let clients = try await Clients(net.alice, net.bob, ringing: 3)
        defer { Task { await clients.stop() } }
        let bob = net.bob.userId.description

        let declined = try await clients.caller.makeCall(to: bob)
        try await clients.callee.reject(try #require(await Self.incoming(clients.calleeEvents)).id)
        let first = await Self.ended(clients.callerEvents)
        #expect(first?.id == declined.id && first?.endReason == .declined)

        let busy = try await clients.caller.makeCall(to: bob)
        try await clients.callee.busy(try #require(await Self.incoming(clients.calleeEvents)).id)
        let second = await Self.ended(clients.callerEvents)
        #expect(second?.id == busy.id && second?.endReason == .busy)

        let unanswered = try await clients.caller.makeCall(to: bob)
        #expect(await Self.incoming(clients.calleeEvents)?.id == unanswered.id)
        let third = await Self.ended(clients.callerEvents)
        #expect(third?.id == unanswered.id && third?.endReason == .noAnswer)
    }

    @Test func glareOverCarrierLeavesOneCall() async throws {
        let net = try await TestNetwork.shared()
        let clients = try await Clients(net.alice, net.carol)
        defer { Task { await clients.stop() } }
        async let fromAlice = clients.caller.makeCall(to: net.carol.userId.description)
        async let fromCarol = clients.callee.makeCall(to: net.alice.userId.description)
        let (a, c) = try await (fromAlice, fromCarol)
        let winner = max(a.id, c.id)
        let calleeEvents = a.id == winner ? clients.calleeEvents : clients.callerEvents
        let callee = a.id == winner ? clients.callee : clients.caller
        var lost: Call?
        var incoming: Call?
        while lost == nil || incoming == nil {
            guard let event = await Self.next(calleeEvents, { $0 }) else { break }
            if case .ended(let call) = event { lost = call }
            if case .incoming(let call) = event { incoming = call }
        }
        #expect(lost?.id == min(a.id, c.id) && (lost?.endReason == .glare || lost?.endReason == .busy))
        #expect(incoming?.id == winner)
        try await callee.endCall(winner)
    }

    /// Bob and Carol are not friends (Bob never accepted Carol): Bob cannot call her,
    /// and her invites cannot reach him.
    @Test func onlyFriendsCanCall() async throws {
        let net = try await TestNetwork.shared()
        let clients = try await Clients(net.bob, net.carol)
        defer { Task { await clients.stop() } }
        #expect(await !net.bob.isFriend(net.carol.userId))
        await #expect(throws: CallError.self) { try await clients.caller.makeCall(to: net.carol.userId.description) }
        let offer = RtcSignal(type: .offer, sdp: "v=0", callId: "stranger").encoded()
        await #expect(throws: CarrierError.self) {
            try await net.carol.sendInvite(offer, to: net.bob.userId.description + ":carrier")
        }
        #expect(await clients.caller.activeCalls.isEmpty)
    }

    /// A signal over the 8 KB invite limit is refused with a clear error, never cut.
    @Test func aSignalTooLargeForAnInviteIsAClearError() async throws {
        let net = try await TestNetwork.shared()
        let provider = try await CarrierSignalingProvider(carrier: net.alice)
        let huge = RtcSignal(type: .offer, sdp: String(repeating: "a=x-filler\r\n", count: 800), callId: "big")
        await #expect(throws: SignalError.tooLarge(huge.encoded().count)) {
            try await provider.send(huge, to: net.bob.userId.description)
        }
        #expect(SignalError.tooLarge(9000).description.contains("8 KB"))
    }
}
