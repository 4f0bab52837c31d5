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

/// The binary protocol's receiving side on its own: refusals answered at
/// once, a whole file placed and acked, a lying sender cut off.
@Suite struct BinaryReceiverTests {
    let directory = temporaryDirectory("binary-receiver")

    static func ack(_ actions: [BinaryReceiver.Action]) -> FileMessage? {
        for case .reply(let text) in actions { return FileMessage(json: text) }
        return nil
    }

    static func refused(_ actions: [BinaryReceiver.Action]) -> Bool {
        if case .ack(_, _, _, let ok)? = ack(actions) { return !ok }
        return false
    }

    @Test func aWholeFileIsPlacedThenAcked() throws {
        var receiver = BinaryReceiver(directory: directory, maxSize: 100)
        let data = Array("twelve bytes".utf8)
        let digest = Sha256()
        digest.update(data)
        let sha256 = Sha256.hex(digest.finish())
        #expect(receiver.header(name: "a/b.txt", size: 12, sha256: sha256.uppercased()).isEmpty)
        #expect(receiver.receivingName == "b.txt")
        #expect(receiver.bytes(Array(data.prefix(5))).isEmpty)
        let actions = receiver.bytes(Array(data.dropFirst(5)))
        guard actions.count == 2, case .ended(let outcome) = actions[0], case .reply = actions[1] else {
            Issue.record("the outcome, then the ack: \(actions)")
            return
        }
        let placed = try #require(outcome.path)
        #expect(outcome.ok && FileManager.default.contents(atPath: placed) == Data(data))
        #expect(Self.ack(actions) == .ack(name: "b.txt", size: 12, sha256: sha256, ok: true))
        #expect(receiver.receivingName == nil)
    }

    @Test func refusalsAreAnsweredAtOnce() {
        var nowhere = BinaryReceiver(directory: nil, maxSize: 100)
        #expect(
            Self.ack(nowhere.header(name: "x", size: 1, sha256: "")) == .ack(name: "x", size: 0, sha256: "", ok: false))
        var small = BinaryReceiver(directory: directory, maxSize: 10)
        #expect(Self.refused(small.header(name: "big", size: 11, sha256: "")))
        #expect(small.header(name: "one", size: 5, sha256: "").isEmpty)
        #expect(Self.refused(small.header(name: "two", size: 5, sha256: "")))  // one at a time
    }

    @Test func moreThanAnnouncedOrAWrongHashPlacesNothing() throws {
        var receiver = BinaryReceiver(directory: directory, maxSize: 100)
        _ = receiver.header(name: "liar", size: 4, sha256: "")
        let cut = receiver.bytes([1, 2, 3, 4, 5])
        #expect(Self.refused(cut) && receiver.receivingName == nil)
        _ = receiver.header(name: "wrong", size: 2, sha256: String(repeating: "0", count: 64))
        let wrong = receiver.bytes([1, 2])
        guard case .ended(let outcome)? = wrong.first else {
            Issue.record("an outcome")
            return
        }
        #expect(!outcome.ok && outcome.path == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}
