import Foundation
import RtcCalls
import RtcMedia
import RtcPeer
import TestSupport
import Testing

/// Calls whose every packet passes through a `UdpRelay` that blacks out,
/// rebinds a port, or stops for good: the call recovers by itself (ICE
/// restarts over signaling, perfect negotiation when both restart), or ends
/// as failed within its recovery window. Slow-ish: a blackout is 10 s.
@Suite(.serialized) struct CallRecoveryTests {
    struct RelayedPair {
        let pair: CallClientTests.Pair
        let relay: UdpRelay

        init(timeouts: CallMachine.Timeouts = .init()) async throws {
            pair = await CallClientTests.Pair(timeouts: timeouts)
            let relay = try UdpRelay()
            self.relay = relay
            pair.aliceSignals.rewriteOutgoing = { Self.rewrite($0, from: .a, relay) }
            pair.bobSignals.rewriteOutgoing = { Self.rewrite($0, from: .b, relay) }
        }

        /// The signal with every candidate (in its SDP and trickled) pointing at the relay.
        static func rewrite(_ signal: RtcSignal, from side: UdpRelay.Side, _ relay: UdpRelay) -> RtcSignal {
            var signal = signal
            signal.sdp = signal.sdp.map { relay.rewriteDescription($0, from: side) }
            signal.candidates = signal.candidates?.map { candidate in
                var candidate = candidate
                candidate.sdp = relay.rewrite(candidate.sdp, from: side)
                return candidate
            }
            return signal
        }

        /// Alice calls Bob with looping audio both ways and a data channel; returns once media flows.
        func connectedCall(receiveDirectory: String? = nil, video: Bool = false) async throws -> String {
            let bobEvents = await pair.bob.events()
            let aliceEvents = await pair.alice.events()
            let tone = MediaChecks.mediaFile("tone-440-660.wav")
            let pictures = video ? MediaChecks.mediaFile("testsrc.ivf") : nil
            let call = try await pair.alice.makeCall(
                to: "bob", options: video ? [.audio, .video, .data] : [.audio, .data],
                media: CallMedia(audio: tone, video: pictures, loop: true))
            let incoming = try #require(await CallClientTests.incoming(bobEvents))
            try await pair.bob.accept(
                incoming.id,
                media: CallMedia(audio: tone, video: pictures, loop: true, receiveDirectory: receiveDirectory))
            #expect(await CallClientTests.connected(aliceEvents)?.id == call.id)
            #expect(try await Self.audioGrows(pair.bob, call.id))
            #expect(try await Self.audioGrows(pair.alice, call.id))
            return call.id
        }

        /// Waits (bounded) until more audio packets have arrived at `client` than now; how long that took.
        static func audioGrows(_ client: CallClient, _ callId: String, by count: Int = 10) async throws -> Bool {
            try await audioResumes(client, callId, by: count) != nil
        }

        static func audioResumes(
            _ client: CallClient, _ callId: String, by count: Int = 10, within seconds: Double = 15
        ) async throws -> Duration? {
            let started = ContinuousClock.now
            let before = try await audioPackets(client, callId)
            while ContinuousClock.now - started < .seconds(seconds) {
                if try await audioPackets(client, callId) >= before + count { return ContinuousClock.now - started }
                try await Task.sleep(for: .milliseconds(20))  // polling media statistics, bounded
            }
            return nil
        }

        static func audioPackets(_ client: CallClient, _ callId: String) async throws -> Int {
            try await packets("audio", client, callId)
        }

        static func packets(_ kind: String, _ client: CallClient, _ callId: String) async throws -> Int {
            try await client.mediaStats(callId).received.first { $0.kind == kind }?.packetsReceived ?? 0
        }

        /// From now: how long until audio and video grow again at each side
        /// (measured together, so no wait delays another's figure); nil for one that did not.
        func resumeTimes(_ callId: String, within seconds: Double = 15) async throws -> [String: Duration] {
            let started = ContinuousClock.now
            var baseline: [String: Int] = [:]
            let clients = ["bob": pair.bob, "alice": pair.alice]
            for (name, client) in clients {
                for kind in ["audio", "video"] {
                    baseline[name + " " + kind] = try await Self.packets(kind, client, callId)
                }
            }
            var resumed: [String: Duration] = [:]
            while resumed.count < baseline.count, ContinuousClock.now - started < .seconds(seconds) {
                for (key, count) in baseline where resumed[key] == nil {
                    let parts = key.split(separator: " ").map(String.init)
                    guard let client = clients[parts[0]] else { continue }
                    // 10 audio packets (200 ms) or 5 video packets: flowing again, not a straggler.
                    let needed = parts[1] == "audio" ? 10 : 5
                    if try await Self.packets(parts[1], client, callId) >= count + needed {
                        resumed[key] = ContinuousClock.now - started
                    }
                }
                try await Task.sleep(for: .milliseconds(20))  // polling media statistics, bounded
            }
            return resumed
        }

        func close() async {
            await pair.alice.stop()
            await pair.bob.stop()
            relay.stop()
        }
    }

    /// A 10 s blackout with a file on its way, then a NAT rebinding on the
    /// caller's side: the call stays up, audio and video resume both ways
    /// within 2 s of the network coming back, and the file arrives intact.
    @Test func aCallWithMediaAndAFileSurvivesABlackoutAndAPortChange() async throws {
        let root = temporaryDirectory("call-recovery")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/payload.bin"
        let bytes = 3_000_000
        try Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: URL(fileURLWithPath: file))
        let relayed = try await RelayedPair()
        let callId = try await relayed.connectedCall(receiveDirectory: root + "/in", video: true)
        let aliceEvents = await relayed.pair.alice.events()

        let transfer = Task { try await relayed.pair.alice.sendFile(file, callId: callId) }
        relayed.relay.blackout(for: 10)
        let blackoutEnds = ContinuousClock.now + .seconds(10)
        // The call notices: disconnected (silence, then consent), and not ended.
        #expect(
            await CallClientTests.next(aliceEvents, within: .seconds(12)) { event -> Bool? in
                if case .stateChanged(let call) = event, call.state == .disconnected { return true }
                if case .ended = event { return false }
                return nil
            } == true)
        try await Task.sleep(until: blackoutEnds)  // the fault lasts 10 s: this is its length, not a wait for an event
        let resumed = try await relayed.resumeTimes(callId)
        print("after a 10 s blackout, media resumed: \(resumed)")  // for the notes
        for key in ["bob audio", "bob video", "alice audio", "alice video"] {
            #expect(resumed[key].map { $0 < .seconds(2) } == true, "\(key): \(String(describing: resumed[key]))")
        }

        let outcome = try await transfer.value
        #expect(outcome.ok && outcome.bytes == UInt64(bytes))
        // Said on a failure: what the receive directory holds (a flake once found the file absent here).
        let received = (try? FileManager.default.contentsOfDirectory(atPath: root + "/in")) ?? []
        #expect(
            FileManager.default.contents(atPath: root + "/in/payload.bin")?.count == bytes,
            "in/ holds \(received), the sender's outcome \(outcome)")

        let outagesAfterBlackout = await relayed.pair.alice.call(callId)?.outages ?? 0
        print("outages after the blackout: \(outagesAfterBlackout), relay \(relayed.relay.currentCounts)")
        // Alice's NAT takes a new port: Bob's packets to the old one are lost until ICE restarts.
        let beforeRebinding = try await RelayedPair.audioPackets(relayed.pair.alice, callId)
        try relayed.relay.rebind(.a)
        let rebound = ContinuousClock.now
        // Alice hears nothing from Bob until his ICE agent has moved to her new port, then hears him again.
        let aliceHearsAgain = await eventually(within: .seconds(20)) {
            (try? await RelayedPair.audioPackets(relayed.pair.alice, callId)) ?? 0 >= beforeRebinding + 50
        }
        print("after a port change, alice heard bob again (50 packets) in \(ContinuousClock.now - rebound)")
        #expect(aliceHearsAgain)
        #expect(try await RelayedPair.audioGrows(relayed.pair.bob, callId))  // Alice to Bob never stopped
        let call = try #require(await relayed.pair.alice.call(callId))
        print("outages after the port change: \(call.outages), relay \(relayed.relay.currentCounts)")
        #expect(call.state == .connected && call.outages > outagesAfterBlackout)
        await relayed.close()
    }

    /// Both sides restart ICE at the same instant, ten times in a row: the
    /// offers cross every time, the callee yields, and the call goes on (a
    /// further restart from either side still works).
    @Test func iceRestartsFromBothSidesAtOnceConverge() async throws {
        let relayed = try await RelayedPair()
        let callId = try await relayed.connectedCall()
        for _ in 0..<10 {
            try await relayed.pair.alice.restartIce(callId: callId)
            try await relayed.pair.bob.restartIce(callId: callId)
            #expect(try await RelayedPair.audioGrows(relayed.pair.bob, callId))
            #expect(try await RelayedPair.audioGrows(relayed.pair.alice, callId))
        }
        // Not wedged: a restart from either side is answered.
        for (client, answerer) in [
            (relayed.pair.bob, relayed.pair.aliceSignals), (relayed.pair.alice, relayed.pair.bobSignals),
        ] {
            let answers = answerer.sent.filter { $0.type == .answer }.count
            try await client.restartIce(callId: callId)
            #expect(
                await eventually(within: .seconds(5)) { answerer.sent.filter { $0.type == .answer }.count > answers })
            #expect(try await RelayedPair.audioGrows(relayed.pair.alice, callId))
        }
        #expect(await relayed.pair.alice.call(callId)?.state == .connected)
        await relayed.close()
    }

    /// Both sides add video at the same instant: the offers cross, the
    /// callee yields and offers again, and video flows both ways.
    @Test func bothSidesAddingVideoAtOnceConverge() async throws {
        let relayed = try await RelayedPair()
        let callId = try await relayed.connectedCall()
        let video = MediaChecks.mediaFile("testsrc.ivf")
        async let fromAlice: Void = relayed.pair.alice.addVideo(video, callId: callId)
        async let fromBob: Void = relayed.pair.bob.addVideo(video, callId: callId)
        _ = try await (fromAlice, fromBob)
        for client in [relayed.pair.alice, relayed.pair.bob] {
            #expect(
                await eventually(within: .seconds(10)) {
                    let received = (try? await client.mediaStats(callId).received) ?? []
                    return received.contains { $0.kind == "video" && $0.framesDecoded > 5 }
                })
        }
        #expect(try await RelayedPair.audioGrows(relayed.pair.alice, callId))
        await relayed.close()
    }

    /// The peer is really gone (no packet, no signal, no bye): the call ends
    /// as failed once the recovery window has passed, and says why.
    @Test func aPeerThatIsReallyGoneEndsTheCallWithinTheWindow() async throws {
        let relayed = try await RelayedPair(timeouts: .init(recoveryWindow: 4))
        let aliceEvents = await relayed.pair.alice.events()
        let callId = try await relayed.connectedCall()
        relayed.pair.bobSignals.dropOutgoing = true
        relayed.relay.blackout(for: 3600)
        let started = ContinuousClock.now
        let ended = try #require(await CallClientTests.ended(aliceEvents, within: .seconds(20)))
        let took = ContinuousClock.now - started
        print("a vanished peer: the call ended after \(took)")
        #expect(ended.id == callId && ended.endReason == .failed)
        #expect(ended.endDetail?.contains("recovery window 4 s") == true)
        // Silence is noticed after 3 s, then 4 s of restarts.
        #expect(took < .seconds(10))
        await relayed.close()
    }
}
