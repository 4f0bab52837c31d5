import FileSafety
import Foundation
import Testing

@testable import RtcFileTransfer

/// The senders of both file protocols alone: the steps they ask for, with
/// the buffer, acks, cancels and a closed channel as inputs.
@Suite struct FileSenderTests {
    static let sha = String(repeating: "ab", count: 32)

    @Test func theBinarySenderSendsTheHeaderThenBlocksThenWaitsForTheAck() {
        var sender = BinarySender(name: "a.bin", size: 100, sha256: Self.sha, blockSize: 40)
        guard case .send(let header) = sender.next(buffered: 0) else {
            Issue.record("no header first")
            return
        }
        #expect(FileMessage(json: header) == .header(name: "a.bin", size: 100, sha256: Self.sha))
        var blocks: [Int] = []
        while case .bytes(let count) = sender.next(buffered: 0) {
            blocks.append(count)
            sender.sent(count)
        }
        #expect(blocks == [40, 40, 20])
        #expect(sender.next(buffered: 0) == .waitForAck)
        sender.acknowledged(.ack(name: "a.bin", size: 100, sha256: Self.sha, ok: true))
        #expect(sender.next(buffered: 0) == .finished(.success(SendResult(bytes: 100, sha256: Self.sha, ok: true))))
    }

    @Test func aFullBufferWaitsForTheDrain() {
        var sender = BinarySender(name: "a", size: 100, sha256: Self.sha)
        _ = sender.next(buffered: 0)
        #expect(sender.next(buffered: 5000, highWater: 4096) == .waitForDrain)
        #expect(sender.next(buffered: 4096, highWater: 4096) == .bytes(100))
    }

    @Test func aNoBeforeTheLastByteIsARefusalAndAWrongHashIsNotOk() {
        var refused = BinarySender(name: "a", size: 100, sha256: Self.sha, blockSize: 10)
        _ = refused.next(buffered: 0)
        refused.sent(10)
        refused.acknowledged(.ack(name: "a", size: 0, sha256: "", ok: false))
        #expect(refused.next(buffered: 0) == .finished(.failure(.refused)))

        var mismatch = BinarySender(name: "a", size: 10, sha256: Self.sha)
        _ = mismatch.next(buffered: 0)
        mismatch.sent(10)
        mismatch.acknowledged(.ack(name: "a", size: 10, sha256: "00", ok: true))
        #expect(mismatch.next(buffered: 0) == .finished(.success(SendResult(bytes: 10, sha256: "00", ok: false))))
    }

    @Test func aCancelIsToldOnceWhileBytesRemainThenEnds() {
        var sender = BinarySender(name: "a", size: 100, sha256: Self.sha, blockSize: 10)
        _ = sender.next(buffered: 0)
        sender.cancel()
        guard case .tellPeer(let text) = sender.next(buffered: 0) else {
            Issue.record("the peer is not told")
            return
        }
        #expect(CancelMessage.isCancel(text))
        #expect(sender.next(buffered: 0) == .finished(.failure(.cancelled)))

        var waiting = BinarySender(name: "a", size: 0, sha256: Self.sha)
        _ = waiting.next(buffered: 0)
        #expect(waiting.next(buffered: 0) == .waitForAck)
        waiting.cancel()  // while waiting for the ack: nothing more to tell
        #expect(waiting.next(buffered: 0) == .finished(.failure(.cancelled)))
    }

    @Test func aClosedChannelOrNoAckEndsTheTransfer() {
        var closed = BinarySender(name: "a", size: 100, sha256: Self.sha)
        _ = closed.next(buffered: 0)
        closed.channelClosed()
        #expect(closed.next(buffered: 0) == .finished(.failure(.channelClosed)))

        var silent = BinarySender(name: "a", size: 5_000_000, sha256: Self.sha, blockSize: 5_000_000)
        _ = silent.next(buffered: 0)
        silent.sent(5_000_000)
        #expect(silent.ackWait == .seconds(65))  // a minute, and a second per MB
        silent.ackWaitEnded()
        #expect(silent.next(buffered: 0) == .finished(.failure(.noAcknowledgement(.seconds(65)))))
    }

    @Test func theChunkedSenderNamesTheFirstChunkAndHashesTheLast() throws {
        let data = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var sender = ChunkedSender(
            name: "b.bin", size: UInt64(data.count), mime: "application/octet-stream", fileId: "f")
        var chunks: [ChunkMessage] = []
        var offset = 0
        while case .bytes(let count) = sender.next(buffered: 0) {
            let block = Array(data[offset..<min(offset + count, data.count)])
            offset += block.count
            chunks.append(try #require(ChunkMessage(json: sender.chunk(block))))
        }
        #expect(chunks.map(\.index) == [0, 1, 2])
        #expect(chunks[0].name == "b.bin" && chunks[0].size == 40_000 && chunks[1].name == nil)
        #expect(chunks.map(\.end) == [false, false, true])
        #expect(chunks.flatMap(\.data) == data)
        let hash = Sha256.hex(Sha256.digest(data))
        #expect(chunks[2].sha256 == hash)
        #expect(sender.next(buffered: 0) == .finished(.success(SendResult(bytes: 40_000, sha256: hash, ok: true))))
    }

    @Test func aChunkedFileThatEndsEarlyIsNotOk() {
        var sender = ChunkedSender(name: "c", size: 100, mime: "text/plain", fileId: "g")
        _ = sender.next(buffered: 0)
        _ = sender.chunk(Array(repeating: 1, count: 30))
        _ = sender.next(buffered: 0)
        _ = sender.chunk([])  // the file ended early
        guard case .finished(.success(let result)) = sender.next(buffered: 0) else {
            Issue.record("not finished")
            return
        }
        #expect(result.bytes == 30 && !result.ok)
    }
}
