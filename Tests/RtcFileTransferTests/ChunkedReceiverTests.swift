import FileSafety
import Foundation
import TestSupport
import Testing

@testable import RtcFileTransfer

/// The reference peers' JSON chunks received on their own, into a real
/// directory: one outcome per file, nothing placed unless whole.
@Suite struct ChunkedReceiverTests {
    let directory = temporaryDirectory("chunked-receiver")

    func chunks(_ data: [UInt8], id: String, name: String, size: Int = 4) -> [ChunkMessage] {
        let parts = stride(from: 0, to: data.count, by: size).map { Array(data[$0..<min($0 + size, data.count)]) }
        return parts.enumerated().map { index, part in
            ChunkMessage(
                fileId: id, index: index, mime: "text/plain", end: index == parts.count - 1, data: part, name: name,
                size: UInt64(data.count))
        }
    }

    @Test func aWholeFileIsPlacedUnderItsSafeName() throws {
        var receiver = ChunkedReceiver(directory: directory, maxSize: 1000, maxFiles: 2)
        let data = Array("hello, chunked world".utf8)
        var reports: [ChunkedReceiver.Report] = []
        for chunk in chunks(data, id: "f1", name: "../notes.txt") {
            reports += [receiver.receive(chunk)].compactMap { $0 }
        }
        #expect(reports.count == 5)
        guard case .ended(let outcome)? = reports.last else {
            Issue.record("no outcome")
            return
        }
        #expect(outcome.ok && outcome.bytes == UInt64(data.count) && outcome.name == "notes.txt")
        #expect(FileManager.default.contents(atPath: try #require(outcome.path)) == Data(data))
        #expect(receiver.namesInProgress.isEmpty)
    }

    @Test func aGapOrAnOversizeEndsTheFileAndPlacesNothing() throws {
        var receiver = ChunkedReceiver(directory: directory, maxSize: 10, maxFiles: 2)
        let parts = chunks(Array(repeating: 7, count: 12), id: "gap", name: "gap.bin")
        _ = receiver.receive(parts[0])
        guard case .ended(let gap)? = receiver.receive(parts[2]) else {
            Issue.record("a gap must end the file")
            return
        }
        #expect(!gap.ok && gap.path == nil && !gap.cancelled)
        let big = chunks(Array(repeating: 1, count: 12), id: "big", name: "big.bin")
        _ = receiver.receive(big[0])
        _ = receiver.receive(big[1])
        guard case .ended(let oversize)? = receiver.receive(big[2]) else {
            Issue.record("more than maxSize must end the file")
            return
        }
        #expect(!oversize.ok && oversize.bytes == 8)
        // Nothing left behind: no placed file, no temporary one.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func atMostMaxFilesAtOnceAndCancelEndsEach() throws {
        var receiver = ChunkedReceiver(directory: directory, maxSize: 1000, maxFiles: 2)
        for id in ["a", "b", "c"] { _ = receiver.receive(chunks(Array(repeating: 1, count: 8), id: id, name: id)[0]) }
        #expect(receiver.namesInProgress == ["a", "b"])  // the third is ignored
        let ended = receiver.abortAll(cancelled: true)
        #expect(ended.map(\.name) == ["a", "b"] && ended.allSatisfy { $0.cancelled && !$0.ok })
        #expect(receiver.abortAll(cancelled: true).isEmpty)  // exactly one outcome each
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}
