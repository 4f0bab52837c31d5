import Foundation
import RtcCalls
import RtcFileTransfer
import RtcMedia
import RtcMediaFiles
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
        let order = await pair.alice.events()  // every event of Alice's, as they come, for their order
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
        // The same name again: stored beside the first, which is left as it was.
        try Data("another".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try await pair.alice.sendFile(file, callId: call.id).ok)
        let second = await Self.next(bobEvents) { if case .fileReceived(_, let o) = $0 { o } else { nil } }
        #expect(second?.path == root + "/in/hello (1).bin")
        #expect(FileManager.default.contents(atPath: root + "/in/hello (1).bin") == Data("another".utf8))
        #expect(FileManager.default.contents(atPath: root + "/in/hello.bin")?.count == 300_000)

        try await pair.alice.endCall(call.id)
        let ended = await Self.next(bobEvents) { if case .ended(let c) = $0 { c } else { nil } }
        #expect(ended?.endReason == .remoteHangUp)
        let ours = await Self.next(aliceEvents) { if case .ended(let c) = $0 { c } else { nil } }
        #expect(ours?.endReason == .hangUp && ours?.duration ?? 0 > 0)
        #expect(await pair.alice.call(call.id)?.state == .ended)

        // Each side's setup steps, in the order they must happen.
        let caller = try #require(ours?.timeline)
        let callee = try #require(ended?.timeline)
        let callerSteps = [caller.offerSent, caller.answerReceived, caller.iceConnected, caller.transportConnected]
        let calleeSteps = [callee.offerReceived, callee.answerSent, callee.transportConnected]
        #expect(callerSteps.allSatisfy { $0 != nil } && calleeSteps.allSatisfy { $0 != nil })
        #expect(callerSteps.compactMap { $0 } == callerSteps.compactMap { $0 }.sorted())
        #expect(calleeSteps.compactMap { $0 } == calleeSteps.compactMap { $0 }.sorted())
        #expect(caller.offerReceived == nil && callee.offerSent == nil && callee.offerReceived == ended?.startDate)
        #expect(try #require(caller.offerSent) <= (try #require(callee.offerReceived)))

        // The events came in the order they happened: the states forward only, the end last.
        let rank: [Call.State: Int] = [.ringing: 0, .remoteRinging: 1, .connecting: 2, .connected: 3, .ended: 4]
        var seen: [String] = []
        events: for await event in order {  // the end is in the stream already (Alice's `.ended` came above)
            switch event {
            case .stateChanged(let c) where c.id == call.id: seen.append(c.state.rawValue)
            case .ended(let c) where c.id == call.id:
                seen.append("end")
                break events
            default: break
            }
        }
        let states = seen.dropLast().compactMap { Call.State(rawValue: $0) }.compactMap { rank[$0] }
        #expect(seen.last == "end" && states == states.sorted(), "\(seen)")
    }
}

extension CallClientTests {
    /// A receiver with nowhere to put files refuses at once; the sender stops
    /// sending and says so, instead of sending it all and waiting forever.
    @Test func aFileToAReceiverThatTakesNoneIsRefusedAtOnce() async throws {
        let pair = await Pair()
        let bobEvents = await pair.bob.events()
        let aliceEvents = await pair.alice.events()
        let root = temporaryDirectory("call-refused")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/big.bin"
        try Data(count: 40_000_000).write(to: URL(fileURLWithPath: file))
        let call = try await pair.alice.makeCall(to: "bob", options: [.data])
        let incoming = try #require(await Self.next(bobEvents) { if case .incoming(let c) = $0 { c } else { nil } })
        try await pair.bob.accept(incoming.id, media: CallMedia())
        _ = await Self.next(aliceEvents) { event -> Call? in
            if case .stateChanged(let c) = event, c.state == .connected { return c }
            return nil
        }
        let started = ContinuousClock.now
        await #expect(throws: FileTransferEndpoint.TransferError.refused) {
            try await pair.alice.sendFile(file, callId: call.id)
        }
        print("refused after \(ContinuousClock.now - started)")  // for the notes, not asserted
        try await pair.alice.endCall(call.id)
    }

    static func ended(_ events: AsyncStream<CallEvent>, within: Duration = .seconds(15)) async -> Call? {
        await next(events, within: within) { if case .ended(let c) = $0 { c } else { nil } }
    }

    static func incoming(_ events: AsyncStream<CallEvent>) async -> Call? {
        await next(events) { if case .incoming(let c) = $0 { c } else { nil } }
    }

    @Test func rejectedAndBusyCallsEndWithTheCalleesReason() async throws {
        let pair = await Pair()
        let aliceEvents = await pair.alice.events()
        let bobEvents = await pair.bob.events()
        let first = try await pair.alice.makeCall(to: "bob")
        try await pair.bob.reject(try #require(await Self.incoming(bobEvents)).id)
        let declined = await Self.ended(aliceEvents)
        #expect(declined?.id == first.id && declined?.endReason == .declined)
        // The callee said it was ringing first (confirmRinging).
        #expect(pair.bobSignals.sent.contains { $0.type == .event && $0.event == .ringing })

        let second = try await pair.alice.makeCall(to: "bob")
        try await pair.bob.busy(try #require(await Self.incoming(bobEvents)).id)
        let busy = await Self.ended(aliceEvents)
        #expect(busy?.id == second.id && busy?.endReason == .busy)
    }

    @Test func anUnansweredCallTimesOutOnBothSides() async throws {
        let pair = await Pair(timeouts: .init(ringing: 1, disconnectGrace: 3))
        let aliceEvents = await pair.alice.events()
        let bobEvents = await pair.bob.events()
        _ = try await pair.alice.makeCall(to: "bob")
        #expect(await Self.incoming(bobEvents) != nil)
        #expect(await Self.ended(aliceEvents)?.endReason == .noAnswer)
        #expect(await Self.ended(bobEvents)?.endReason != nil)
    }

    /// Both call each other at the same moment: exactly one call survives, the same one on both sides.
    @Test func glareLeavesExactlyOneCall() async throws {
        let pair = await Pair()
        let aliceEvents = await pair.alice.events()
        let bobEvents = await pair.bob.events()
        async let fromAlice = pair.alice.makeCall(to: "bob")
        async let fromBob = pair.bob.makeCall(to: "alice")
        let (a, b) = try await (fromAlice, fromBob)
        let winner = max(a.id, b.id)
        let loser = min(a.id, b.id)
        // The losing call was placed by the winner's callee: it ends as glare there,
        // and the winner rings there as an incoming call, which can be taken.
        let (callee, calleeEvents) = a.id == winner ? (pair.bob, bobEvents) : (pair.alice, aliceEvents)
        var lost: Call?
        var incoming: Call?
        while lost == nil || incoming == nil {
            guard let event = await Self.next(calleeEvents, { $0 }) else { break }
            if case .ended(let call) = event { lost = call }
            if case .incoming(let call) = event { incoming = call }
        }
        // Glare, or busy when the winner's bye overtook its offer.
        #expect(lost?.id == loser && (lost?.endReason == .glare || lost?.endReason == .busy))
        #expect(incoming?.id == winner)
        try await callee.accept(winner)
        let connected = await Self.next(calleeEvents) { event -> Call? in
            if case .stateChanged(let c) = event, c.state == .connected { return c }
            return nil
        }
        #expect(connected?.id == winner)
        // Any other call (one side may have taken the loser's offer as an incoming call
        // for a moment) ends on its own queue: wait for both sides to settle, bounded.
        var settled = false
        for _ in 0..<200 where !settled {
            let aliceCalls = await pair.alice.activeCalls
            let bobCalls = await pair.bob.activeCalls
            settled = aliceCalls == [winner] && bobCalls == [winner]
            if !settled { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(settled)
    }

    /// The peer stops without its bye getting through: the call still ends
    /// well within 10 s, by the peer's DTLS close (its hang-up) or, when that
    /// does not arrive either (a stop under load), by the recovery window (4 s here).
    @Test func aPeerThatStopsWithoutItsByeEndsTheCall() async throws {
        let pair = await Pair(timeouts: .init(recoveryWindow: 4))
        let aliceEvents = await pair.alice.events()
        let bobEvents = await pair.bob.events()
        let call = try await pair.alice.makeCall(to: "bob")
        try await pair.bob.accept(try #require(await Self.incoming(bobEvents)).id)
        #expect(
            await Self.next(aliceEvents) { event -> Bool? in
                if case .stateChanged(let c) = event, c.state == .connected { return true }
                return nil
            } == true)
        pair.bobSignals.dropOutgoing = true  // bob's bye never arrives
        let started = ContinuousClock.now
        await pair.bob.stop()
        let ended = await Self.ended(aliceEvents)
        #expect(ended?.id == call.id && [.remoteHangUp, .failed].contains(ended?.endReason))
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func signalsFromStrangersAndGarbageAreDropped() async throws {
        let (aliceSignals, _) = InMemorySignaling.pair("alice", "bob")
        let alice = CallClient(
            provider: aliceSignals, configuration: .init(peer: Self.loopback, mayCall: { $0 == "bob" }))
        await alice.start()
        let events = await alice.events()
        aliceSignals.deliver(.signal(RtcSignal(type: .offer, sdp: "v=0", callId: "m"), from: "mallory"))
        aliceSignals.deliver(.undecodable(.undecodable("not JSON"), from: "bob"))
        let first = await Self.next(events, within: .seconds(2)) { $0 }
        guard case .badSignal(let from, _)? = first else {
            Issue.record("expected only the bad-signal report, got \(String(describing: first))")
            return
        }
        #expect(from == "bob")
        #expect(await alice.activeCalls.isEmpty)
        await #expect(throws: CallError.self) { try await alice.makeCall(to: "mallory") }
        // A media file that cannot be read is an error when the call is placed, not silence later
        // (the files open while the offer goes out: the call then ends at once).
        let junk = temporaryDirectory("call-junk") + "/broken.wav"
        defer { try? FileManager.default.removeItem(atPath: (junk as NSString).deletingLastPathComponent) }
        try Data("not a wave".utf8).write(to: URL(fileURLWithPath: junk))
        await #expect(throws: MediaFileError.self) {
            try await alice.makeCall(to: "bob", media: CallMedia(audio: junk))
        }
        #expect(await eventually(within: .seconds(5)) { await alice.activeCalls.isEmpty })
    }

    /// Files as the reference peers send them (JSON chunks), and cancel.
    @Test func chunkedFilesArriveAndCancelEndsATransferOnce() async throws {
        let (aliceSignals, bobSignals) = InMemorySignaling.pair("alice", "bob")
        var configuration = CallClient.Configuration(peer: Self.loopback)
        configuration.fileProtocol = .chunked
        let alice = CallClient(provider: aliceSignals, configuration: configuration)
        let bob = CallClient(provider: bobSignals, configuration: .init(peer: Self.loopback))
        await alice.start()
        await bob.start()
        let bobEvents = await bob.events()
        let root = temporaryDirectory("call-chunks")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/notes.txt"
        try Data(repeating: 0x41, count: 100_000).write(to: URL(fileURLWithPath: file))
        let call = try await alice.makeCall(to: "bob", options: [.audio, .data])
        try await bob.accept(
            try #require(await Self.incoming(bobEvents)).id, media: CallMedia(receiveDirectory: root + "/in"))
        let outcome = try await alice.sendFile(file, callId: call.id)
        #expect(outcome.ok && outcome.bytes == 100_000)
        let received = await Self.next(bobEvents) { if case .fileReceived(_, let o) = $0 { o } else { nil } }
        #expect(received?.ok == true)
        #expect(FileManager.default.contentsEqual(atPath: file, andPath: root + "/in/notes.txt"))
        try await alice.endCall(call.id)
    }
}

extension CallClientTests {
    static func connected(_ events: AsyncStream<CallEvent>) async -> Call? {
        await next(events) { event -> Call? in
            if case .stateChanged(let c) = event, c.state == .connected { return c }
            return nil
        }
    }

    /// Bounded wait for a condition on a call's received media.
    static func waitForReceived(
        _ client: CallClient, _ callId: String, _ condition: @escaping ([MediaReceiver.Stats]) -> Bool
    ) async throws -> Bool {
        for _ in 0..<300 {
            if condition(try await client.mediaStats(callId).received) { return true }
            try await Task.sleep(for: .milliseconds(20))  // polling media statistics, bounded (6 s)
        }
        return false
    }

    /// An audio call gains video in place, restarts ICE, mutes and swaps its source, and keeps going.
    @Test func aCallUnderWayAddsVideoRestartsIceAndMutes() async throws {
        let pair = await Pair()
        let aliceEvents = await pair.alice.events()
        let bobEvents = await pair.bob.events()
        let call = try await pair.alice.makeCall(
            to: "bob", media: CallMedia(audio: MediaChecks.mediaFile("tone-440-660.wav"), loop: true))
        try await pair.bob.accept(try #require(await Self.incoming(bobEvents)).id)
        #expect(await Self.connected(aliceEvents)?.id == call.id)
        #expect(
            try await Self.waitForReceived(pair.bob, call.id) {
                $0.contains { $0.kind == "audio" && $0.packetsReceived > 10 }
            })
        // When the first packet came and the first frame was decoded (for the call's step report).
        let audio = try #require(try await pair.bob.mediaStats(call.id).received.first { $0.kind == "audio" })
        let firstPacket = try #require(audio.firstPacketDate)
        #expect(try #require(audio.firstFrameDate) >= firstPacket)

        // A renegotiation offer for the same callId, answered in place.
        try await pair.alice.addVideo(MediaChecks.mediaFile("testsrc.y4m"), callId: call.id)
        #expect(
            try await Self.waitForReceived(pair.bob, call.id) {
                $0.contains { $0.kind == "video" && $0.framesDecoded > 5 }
            })
        #expect(pair.aliceSignals.sent.filter { $0.type == .offer }.count == 2)

        try await pair.alice.restartIce(callId: call.id)
        let before = try await pair.bob.mediaStats(call.id).received.first { $0.kind == "audio" }?.packetsReceived ?? 0
        #expect(
            try await Self.waitForReceived(pair.bob, call.id) {
                $0.contains { $0.kind == "audio" && $0.packetsReceived > before + 20 }
            })
        #expect(pair.aliceSignals.sent.filter { $0.type == .offer }.count == 3)
        #expect(await pair.alice.call(call.id)?.state == .connected)

        // Muted: nothing more arrives; unmuted with another source: it flows again.
        try await pair.alice.setMuted(true, kind: .audio, callId: call.id)
        try await Task.sleep(for: .milliseconds(100))  // packets already in flight land
        let muted = try await pair.bob.mediaStats(call.id).received.first { $0.kind == "audio" }?.packetsReceived ?? 0
        try await Task.sleep(for: .milliseconds(300))  // what muting is measured over
        #expect(try await pair.bob.mediaStats(call.id).received.first { $0.kind == "audio" }?.packetsReceived == muted)
        try await pair.alice.replaceSource(MediaChecks.mediaFile("tone.opus"), kind: .audio, callId: call.id)
        try await pair.alice.setMuted(false, kind: .audio, callId: call.id)
        #expect(
            try await Self.waitForReceived(pair.bob, call.id) {
                $0.contains { $0.kind == "audio" && $0.packetsReceived > muted + 10 }
            })
        try await pair.alice.endCall(call.id)
    }

    /// One callee answers several callers at once (a bot), each call on its own.
    @Test func oneClientAnswersSeveralCallsAtOnce() async throws {
        let providers = InMemorySignaling.network(["alice", "bob", "carol"])
        let clients = try ["alice", "bob", "carol"].map { id in
            CallClient(provider: try #require(providers[id]), configuration: .init(peer: Self.loopback))
        }
        for client in clients { await client.start() }
        let (alice, bob, carol) = (clients[0], clients[1], clients[2])
        let aliceEvents = await alice.events()
        let bobEvents = await bob.events()
        let carolEvents = await carol.events()
        let fromBob = try await bob.makeCall(to: "alice")
        let fromCarol = try await carol.makeCall(to: "alice")
        var answered: Set<String> = []
        while answered.count < 2, let call = await Self.incoming(aliceEvents) {
            try await alice.accept(call.id)
            answered.insert(call.id)
        }
        #expect(answered == [fromBob.id, fromCarol.id])
        #expect(await Self.connected(bobEvents)?.id == fromBob.id)
        #expect(await Self.connected(carolEvents)?.id == fromCarol.id)
        #expect(Set(await alice.activeCalls) == answered)
        // Ending one leaves the other.
        try await bob.endCall(fromBob.id)
        #expect(await Self.ended(carolEvents, within: .seconds(1)) == nil)
        #expect(await alice.call(fromCarol.id)?.state == .connected)
        try await carol.endCall(fromCarol.id)
    }
}

extension CallClientTests {
    /// The receiver cancels mid-transfer: the sender's send ends with `.cancelled`,
    /// and the receiver hears of the file exactly once, as cancelled.
    @Test func aTransferCancelledByTheReceiverEndsOnceOnBothSides() async throws {
        let pair = await Pair()
        let aliceEvents = await pair.alice.events()
        let bobEvents = await pair.bob.events()
        let root = temporaryDirectory("call-cancel")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/big.bin"
        try Data(count: 64 << 20).write(to: URL(fileURLWithPath: file))
        let call = try await pair.alice.makeCall(to: "bob", options: [.audio, .data])
        try await pair.bob.accept(
            try #require(await Self.incoming(bobEvents)).id, media: CallMedia(receiveDirectory: root + "/in"))
        #expect(await Self.connected(aliceEvents)?.id == call.id)
        let sending = Task { try await pair.alice.sendFile(file, callId: call.id) }
        let progress = await Self.next(bobEvents) { event -> Bool? in
            if case .fileProgress(_, let p) = event, !p.sending, p.bytes > 0 { return true }
            return nil
        }
        #expect(progress == true)
        try await pair.bob.cancelFiles(callId: call.id)
        await #expect(throws: FileTransferEndpoint.TransferError.cancelled) { try await sending.value }
        var outcomes: [FileTransferEndpoint.Outcome] = []
        while let outcome = await Self.next(
            bobEvents, within: .seconds(1),
            { event -> FileTransferEndpoint.Outcome? in
                if case .fileReceived(_, let o) = event { return o }
                return nil
            })
        {
            outcomes.append(outcome)
        }
        #expect(outcomes.count == 1 && outcomes.first?.cancelled == true && outcomes.first?.ok == false)
        #expect(!FileManager.default.fileExists(atPath: root + "/in/big.bin"))
        try await pair.alice.endCall(call.id)
    }
}

extension CallClientTests {
    /// Text and bytes on a call's data channel reach the other application as
    /// `.message` events, also while a file goes the same way; bytes are
    /// refused while this side sends a file (they would be taken for the file's).
    @Test func textAndBytesInACallReachTheOtherSide() async throws {
        let pair = await Pair()
        let aliceEvents = await pair.alice.events()
        let bobEvents = await pair.bob.events()
        let root = temporaryDirectory("call-messages")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let call = try await pair.alice.makeCall(to: "bob", options: [.audio, .data])
        let incoming = try #require(await Self.incoming(bobEvents))
        try await pair.bob.accept(incoming.id, media: CallMedia(receiveDirectory: root + "/in"))
        #expect(await Self.connected(aliceEvents)?.id == call.id)

        try await pair.alice.sendText("hello bob", callId: call.id)
        let text = await Self.next(bobEvents) { event -> String? in
            if case .message(_, .text(let text)) = event { return text }
            return nil
        }
        #expect(text == "hello bob")
        try await pair.bob.sendData([1, 2, 3], callId: incoming.id)
        let bytes = await Self.next(aliceEvents) { event -> [UInt8]? in
            if case .message(let id, .binary(let bytes)) = event, id == call.id { return bytes }
            return nil
        }
        #expect(bytes == [1, 2, 3])

        // A text while a file goes: both arrive, the file intact.
        let file = root + "/big.bin"
        try Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 5) }).write(to: URL(fileURLWithPath: file))
        let transfer = Task { try await pair.alice.sendFile(file, callId: call.id) }
        try await pair.alice.sendText("meanwhile", callId: call.id)
        let meanwhile = await Self.next(bobEvents) { event -> String? in
            if case .message(_, .text(let text)) = event { return text }
            return nil
        }
        #expect(meanwhile == "meanwhile")
        #expect(try await transfer.value.ok)
        #expect(FileManager.default.contentsEqual(atPath: file, andPath: root + "/in/big.bin"))
        try await pair.alice.endCall(call.id)
    }
}
