import Foundation
import Testing

@testable import RtcCalls

@Suite struct BoundedLineReaderTests {
    /// Lines read from a pipe that `write` fills on another thread.
    func lines(_ input: [UInt8], maxLine: Int) -> [BoundedLineReader.Line] {
        var fds: [Int32] = [0, 0]
        _ = pipe(&fds)
        let writeEnd = fds[1]
        let writer = Thread {
            var offset = 0
            while offset < input.count {
                let count = input[offset...].withUnsafeBytes { write(writeEnd, $0.baseAddress, min($0.count, 10_000)) }
                if count <= 0 { break }
                offset += count
            }
            close(writeEnd)
        }
        writer.start()
        var reader = BoundedLineReader(fd: fds[0], maxLine: maxLine)
        var result: [BoundedLineReader.Line] = []
        while let line = reader.next() { result.append(line) }
        close(fds[0])
        return result
    }

    @Test func splitsLinesAndDropsCarriageReturns() {
        let result = lines(Array("one\r\ntwo\n\nlast".utf8), maxLine: 100)
        #expect(result == [.text(Array("one".utf8)), .text(Array("two".utf8)), .text([]), .text(Array("last".utf8))])
    }

    @Test func aLineOverTheLimitIsDroppedAndReadingGoesOn() {
        let long = [UInt8](repeating: 0x61, count: 300_000)
        let result = lines(long + [0x0A] + Array("after\n".utf8) + long, maxLine: 1000)
        #expect(result == [.tooLong(300_000), .text(Array("after".utf8)), .tooLong(300_000)])
    }

    @Test func aLineExactlyAtTheLimitIsKept() {
        let line = [UInt8](repeating: 0x62, count: 70_000)
        // Compared by a summary, so a failure does not print 70,000 numbers.
        let kept = lines(line + [0x0A], maxLine: 70_000)
        #expect(kept.count == 1 && kept.first == .text(line))
        let dropped = lines(line + [0x62, 0x0A], maxLine: 70_000)
        #expect(dropped.map(\.summary) == ["tooLong(70001)"])
    }
}

extension BoundedLineReader.Line {
    var summary: String {
        switch self {
        case .text(let bytes): "text(\(bytes.count))"
        case .tooLong(let count): "tooLong(\(count))"
        }
    }
}
