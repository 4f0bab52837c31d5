import FileSafety
import Testing

@testable import CarrierNode

/// A received file's SHA-256 taken as its bytes are written: only when they
/// came in order from the first byte; otherwise the file is read back.
@Suite struct RunningDigestTests {
    let bytes = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) }

    @Test func bytesInOrderFromTheStartGiveTheFilesDigest() {
        let running = RunningDigest()
        for start in stride(from: 0, to: bytes.count, by: 1371) {
            running.add(Array(bytes[start..<min(start + 1371, bytes.count)]), at: UInt64(start))
        }
        #expect(running.digest(ofFirst: 5000) == Sha256.digest(bytes))
        // Asked again (the verdict may be asked twice): the same answer.
        #expect(running.digest(ofFirst: 5000) == Sha256.digest(bytes))
        // Fewer or more bytes than went through: no answer.
        #expect(running.digest(ofFirst: 4999) == nil)
    }

    @Test func aResumeOrAGapLeavesItWithoutAnAnswer() {
        let resumed = RunningDigest()
        resumed.add(Array(bytes[2000...]), at: 2000)  // the first 2000 were on disk already
        #expect(resumed.digest(ofFirst: 5000) == nil)
        let gap = RunningDigest()
        gap.add(Array(bytes[..<1000]), at: 0)
        gap.add(Array(bytes[2000...]), at: 2000)
        gap.add(Array(bytes[1000..<2000]), at: 1000)
        #expect(gap.digest(ofFirst: 5000) == nil)
    }

    @Test func anEmptiedFileStartsAgain() {
        let running = RunningDigest()
        running.add(Array(bytes[3000...]), at: 3000)
        running.reset()
        running.add(bytes, at: 0)
        #expect(running.digest(ofFirst: 5000) == Sha256.digest(bytes))
    }
}
