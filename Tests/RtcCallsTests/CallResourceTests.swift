import CShim
import Foundation
import RtcCalls
import RtcMedia
import TestSupport
import Testing

/// A process that takes call after call must not keep anything from them:
/// threads, file descriptors and memory are back where they were.
@Suite(.serialized) struct CallResourceTests {
    static func threads() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    static func descriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// Heap bytes in use (glibc's count of allocated blocks, in kB): unlike the
    /// resident size it does not move with the allocator's pools.
    static func heapKilobytes() -> Int { Int(cshim_heap_bytes_in_use()) / 1024 }

    /// Resident memory in kB (VmRSS).
    static func residentKilobytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return -1 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    /// One call with audio both ways (and a file every third call), ended by either side.
    static func oneCall(
        _ pair: CallClientTests.Pair, _ aliceEvents: AsyncStream<CallEvent>, _ bobEvents: AsyncStream<CallEvent>,
        round: Int, file: String, inbox: String
    ) async throws {
        let tone = MediaChecks.mediaFile("tone.opus")
        let call = try await pair.alice.makeCall(
            to: "bob", options: [.audio, .data], media: CallMedia(audio: tone, loop: true))
        let incoming = try #require(await CallClientTests.incoming(bobEvents))
        try await pair.bob.accept(incoming.id, media: CallMedia(audio: tone, loop: true, receiveDirectory: inbox))
        #expect(await CallClientTests.connected(aliceEvents)?.id == call.id)
        if round % 3 == 0 { #expect(try await pair.alice.sendFile(file, callId: call.id).ok) }
        if round % 2 == 0 { try await pair.alice.endCall(call.id) } else { try await pair.bob.endCall(incoming.id) }
        let aliceEnded = await CallClientTests.ended(aliceEvents)
        let bobEnded = await CallClientTests.ended(bobEvents)
        #expect(aliceEnded != nil && bobEnded != nil)
    }

    /// 30 calls in a row between two clients in one process, after ten to warm
    /// up: the thread and descriptor counts are back to what they were, and
    /// the heap grew by less than 2 MB for both clients (each keeps the
    /// outcome and statistics of its last 64 calls, about 5 kB each). It found
    /// a media pacer kept alive by its own thread with its source's open file
    /// (two descriptors and 340 kB a call), closed transports that kept their
    /// TLS, SRTP and SCTP state, and ended calls kept whole for their statistics.
    @Test func thirtyCallsLeaveNoThreadsDescriptorsOrMemoryBehind() async throws {
        let root = temporaryDirectory("call-resources")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/payload.bin"
        try Data((0..<500_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: URL(fileURLWithPath: file))
        let pair = await CallClientTests.Pair()
        // One subscription each for the whole run (a stream nobody reads keeps every event).
        let aliceEvents = await pair.alice.events()
        let bobEvents = await pair.bob.events()
        // The first calls start what lives for the process (usrsctp's stack, libsrtp, GLib's and
        // the allocator's pools).
        for round in 1...10 {
            try await Self.oneCall(pair, aliceEvents, bobEvents, round: round, file: file, inbox: root + "/in")
        }
        let settled = { @Sendable (threads: Int, descriptors: Int) async -> Bool in
            await eventually(within: .seconds(10)) {
                Self.threads() <= threads && Self.descriptors() <= descriptors
            }
        }
        _ = await settled(Self.threads(), Self.descriptors())
        let (threads, descriptors, memory, heap) = (
            Self.threads(), Self.descriptors(), Self.residentKilobytes(), Self.heapKilobytes()
        )
        for round in 11...40 {
            try await Self.oneCall(pair, aliceEvents, bobEvents, round: round, file: file, inbox: root + "/in")
            try? FileManager.default.removeItem(atPath: root + "/in")
        }
        let back = await settled(threads, descriptors)
        let (threadsAfter, descriptorsAfter, memoryAfter, heapAfter) = (
            Self.threads(), Self.descriptors(), Self.residentKilobytes(), Self.heapKilobytes()
        )
        print(
            "30 calls: threads \(threads) → \(threadsAfter), descriptors \(descriptors) → \(descriptorsAfter), RSS \(memory) → \(memoryAfter) kB, heap \(heap) → \(heapAfter) kB"
        )  // for the notes
        if !back {
            var kinds: [String: Int] = [:]
            for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
                let target =
                    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name)) ?? "?"
                kinds[
                    String(target.prefix(while: { $0 != ":" && $0 != "[" }))
                        + (target.contains("[") ? String(target.split(separator: "[").first ?? "") : ""), default: 0] +=
                    1
                if target.hasPrefix("/") { kinds[target, default: 0] += 1 }
            }
            print("descriptors by kind: \(kinds)")
        }
        #expect(back, "threads \(threads) → \(threadsAfter), descriptors \(descriptors) → \(descriptorsAfter)")
        #expect(heapAfter - heap < 2_000, "the heap grew \(heapAfter - heap) kB")
        await pair.alice.stop()
        await pair.bob.stop()
    }
}
