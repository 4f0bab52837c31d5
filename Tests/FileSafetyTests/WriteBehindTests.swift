import Foundation
import Testing

@testable import FileSafety

@Suite struct WriteBehindTests {
    private func temporaryPath() -> String {
        NSTemporaryDirectory() + "/writebehind-\(UInt32.random(in: 0...UInt32.max))"
    }

    private func onDisk(_ path: String) -> [UInt8] {
        Array((try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data())
    }

    /// toxcore's chunks, in order: the disk sees whole blocks, always a prefix
    /// of what was written, and all of it after `flush`.
    @Test func chunksInOrderReachTheDiskInBlocksAndAsAPrefix() throws {
        let path = temporaryPath()
        defer { unlink(path) }
        let file = try #require(BlockFile.openForUpdate(path))
        let writes = WriteBehind(file: file, capacity: 10_000)
        let bytes = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        var position = 0
        var sizesSeen: Set<Int> = []
        while position < bytes.count {
            let end = min(position + 1371, bytes.count)
            try writes.write(Array(bytes[position..<end]), at: UInt64(position))
            position = end
            let disk = onDisk(path)
            #expect(disk == Array(bytes.prefix(disk.count)))
            #expect(disk.count + writes.pending == position)
            #expect(writes.pending <= 10_000)
            sizesSeen.insert(disk.count)
        }
        // 50,000 bytes in 1,371-byte chunks: a block each 7 chunks (9,597 bytes), 5 blocks.
        #expect(sizesSeen.count == 6)
        try writes.flush()
        #expect(writes.pending == 0)
        #expect(onDisk(path) == bytes)
    }

    /// A write that does not continue the block (a transfer started again
    /// from 0) writes the block first, so the file never has a hole.
    @Test func aWriteElsewhereWritesTheBlockFirst() throws {
        let path = temporaryPath()
        defer { unlink(path) }
        let file = try #require(BlockFile.openForUpdate(path))
        let writes = WriteBehind(file: file, capacity: 4096)
        try writes.write([1, 1, 1, 1], at: 0)
        try writes.write([2, 2], at: 4)
        #expect(onDisk(path).isEmpty)
        try writes.write([3, 3], at: 1)
        #expect(onDisk(path) == [1, 1, 1, 1, 2, 2])
        try writes.flush()
        #expect(onDisk(path) == [1, 3, 3, 1, 2, 2])
        // As large as a block: written at once, after what waited.
        try writes.write([4], at: 6)
        try writes.write([UInt8](repeating: 5, count: 4096), at: 7)
        #expect(writes.pending == 0)
        #expect(onDisk(path) == [1, 3, 3, 1, 2, 2, 4] + [UInt8](repeating: 5, count: 4096))
    }

    /// A disk that refuses the block says so at the write that needed room or
    /// at `flush`, and what failed is not tried again.
    @Test func aRefusedBlockIsReportedAndDropped() throws {
        let file = try #require(BlockFile.openForUpdate("/dev/full"))
        let writes = WriteBehind(file: file, capacity: 100)
        try writes.write([UInt8](repeating: 9, count: 60), at: 0)
        #expect(throws: BlockFile.Failure(code: ENOSPC)) { try writes.write([UInt8](repeating: 9, count: 60), at: 60) }
        #expect(writes.pending == 0)  // the refused block and the bytes behind it are gone
        try writes.write([UInt8](repeating: 9, count: 10), at: 120)
        #expect(throws: BlockFile.Failure(code: ENOSPC)) { try writes.flush() }
        #expect(writes.pending == 0)
        try writes.flush()
    }

    /// `discard` forgets the block: a deleted or emptied file gets none of it.
    @Test func discardedBytesNeverReachTheFile() throws {
        let path = temporaryPath()
        defer { unlink(path) }
        let file = try #require(BlockFile.openForUpdate(path))
        let writes = WriteBehind(file: file)
        try writes.write([1, 2, 3], at: 0)
        writes.discard()
        try writes.flush()
        #expect(writes.pending == 0)
        #expect(onDisk(path).isEmpty)
    }
}
