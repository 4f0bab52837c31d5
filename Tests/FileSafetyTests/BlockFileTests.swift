import Foundation
import Testing

@testable import FileSafety

@Suite struct BlockFileTests {
    private func temporaryPath() -> String {
        NSTemporaryDirectory() + "/blockfile-\(UInt32.random(in: 0...UInt32.max))"
    }

    @Test func writtenBlocksReadBackInBlocksAndAsOneStream() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let writer = try #require(BlockFile.create(path))
        try writer.write(Array(bytes[0..<70_000]))
        try writer.write([])
        try writer.write(Array(bytes[70_000...]))
        writer.close()
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)

        let reader = try #require(BlockFile.openForReading(path))
        var read: [UInt8] = []
        while true {
            let block = try reader.read(upTo: 65536)
            if block.isEmpty { break }
            #expect(block.count <= 65536)
            read += block
        }
        #expect(read == bytes)

        var streamed: [UInt8] = []
        var blocks = 0
        try #require(BlockFile.openForReading(path)).forEachBlock(size: 1 << 16) {
            streamed += $0
            blocks += 1
        }
        #expect(streamed == bytes && blocks == 4)
    }

    @Test func createRefusesAnExistingFileAndOpenAMissingOne() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(BlockFile.openForReading(path) == nil)
        #expect(BlockFile.create(path) != nil)
        #expect(BlockFile.create(path) == nil)  // a partial file is never shared
    }

    @Test func readingADirectoryFailsWithTheSystemsReason() throws {
        let reader = try #require(BlockFile.openForReading(NSTemporaryDirectory()))
        #expect(throws: BlockFile.Failure(code: EISDIR)) { try reader.read(upTo: 16) }
    }
}
