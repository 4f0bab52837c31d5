import Foundation
import RtcCalls
import RtcMedia
import TestSupport
import Testing

/// Hanging up in the middle of things, many times: no deadlock, no crash,
/// and every call and transfer ends on both sides.
@Suite(.serialized) struct HangUpStressTests {
    /// Bob hangs up while Alice sends audio and a file, 100 times in a row
    /// (at a different moment of the transfer each time); each time both
    /// sides see the call end and Alice's transfer returns.
    @Test func hangingUpDuringMediaAndAFileHundredTimes() async throws {
        let root = temporaryDirectory("hangups")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/payload.bin"
        try Data((0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }).write(to: URL(fileURLWithPath: file))
        let pair = await CallClientTests.Pair()
        let aliceEvents = await pair.alice.events()
        let bobEvents = await pair.bob.events()
        let tone = MediaChecks.mediaFile("tone.opus")  // sent as it is: no per-call resampling in a debug build
        var generator = SplitMix(seed: 100)
        var ended = 0
        let started = ContinuousClock.now
        for round in 0..<100 {
            let call = try await pair.alice.makeCall(
                to: "bob", options: [.audio, .data], media: CallMedia(audio: tone, loop: true))
            let incoming = try #require(await CallClientTests.incoming(bobEvents), "round \(round): no incoming call")
            try await pair.bob.accept(
                incoming.id, media: CallMedia(audio: tone, loop: true, receiveDirectory: root + "/in"))
            #expect(await CallClientTests.connected(aliceEvents)?.id == call.id, "round \(round)")
            let returned = Flag()
            Task {
                _ = try? await pair.alice.sendFile(file, callId: call.id)
                returned.set()
            }
            try await Task.sleep(for: .milliseconds(Int64.random(in: 0...40, using: &generator)))  // a random moment
            try await pair.bob.endCall(incoming.id)
            let bobEnded = await CallClientTests.ended(bobEvents, within: .seconds(10))
            let aliceEnded = await CallClientTests.ended(aliceEvents, within: .seconds(10))
            #expect(bobEnded?.id == incoming.id && aliceEnded?.id == call.id, "round \(round)")
            #expect(aliceEnded?.endReason == .remoteHangUp, "round \(round)")
            // The transfer returns (an error: the call ended), however far it had got.
            #expect(await eventually(within: .seconds(10)) { returned.value }, "round \(round): the transfer hangs")
            if bobEnded != nil, aliceEnded != nil { ended += 1 }
        }
        #expect(ended == 100)
        let aliceCalls = await pair.alice.activeCalls
        let bobCalls = await pair.bob.activeCalls
        #expect(aliceCalls.isEmpty && bobCalls.isEmpty)
        print("100 hang-ups during media and a file in \(ContinuousClock.now - started)")  // for the notes
        await pair.alice.stop()
        await pair.bob.stop()
    }
}

/// A flag set from one task and read from another.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var raised = false
    func set() { lock.withLock { raised = true } }
    var value: Bool { lock.withLock { raised } }
}
