import Foundation
import Testing

@testable import FileSafety

@Suite struct ReadAheadTests {
    private func file(_ bytes: [UInt8]) throws -> (path: String, fd: Int32) {
        let path = NSTemporaryDirectory() + "/readahead-\(UInt32.random(in: 0...UInt32.max))"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        return (path, fd)
    }

    /// toxcore's chunks, in order and after a seek back: each piece is the
    /// file's bytes at its place, and the last one stops at the file's end.
    @Test func piecesAreTheFilesBytesInAnyOrder() throws {
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 8) }
        let (path, fd) = try file(bytes)
        defer {
            close(fd)
            unlink(path)
        }
        let reader = ReadAhead(fd: fd, blockSize: 4096)
        var read: [UInt8] = []
        var position = 0
        while position < bytes.count {
            let length = min(1371, bytes.count - position)
            let piece = try #require(reader.withBytes(at: UInt64(position), length: length) { Array($0) })
            read += piece
            position += length
        }
        #expect(read == bytes)
        let again = reader.withBytes(at: 100, length: 5000) { Array($0) }  // back, and larger than a block
        #expect(again == Array(bytes[100..<5100]))
        #expect(reader.withBytes(at: 9_999, length: 1) { Array($0) } == [bytes[9_999]])
    }

    /// Past the end (a file that shrank): no bytes and no call.
    @Test func aPieceThatIsNotThereIsNil() throws {
        let (path, fd) = try file([1, 2, 3])
        defer {
            close(fd)
            unlink(path)
        }
        let reader = ReadAhead(fd: fd)
        #expect(reader.withBytes(at: 2, length: 2) { _ in true } == nil)
        #expect(reader.withBytes(at: 0, length: 3) { Array($0) } == [1, 2, 3])
        #expect(reader.withBytes(at: 3, length: 1) { _ in true } == nil)
        #expect(ReadAhead(fd: -1).withBytes(at: 0, length: 1) { _ in true } == nil)
    }
}
