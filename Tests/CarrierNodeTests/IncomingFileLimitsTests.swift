import FileSafety
import Foundation
import Testing

@testable import CarrierNode

/// What a friend's files may hold of this node: places per friend, time
/// without progress, disk for the files under way, and the bytes kept for
/// resumes. The state machine on virtual time, the sweep on real files.
@Suite struct IncomingFileLimitsTests {
    let start = ContinuousClock.now
    let friend: UserId
    let other: UserId

    init() throws {
        friend = try #require(UserId(publicKey: [UInt8](repeating: 1, count: 32)))
        other = try #require(UserId(publicKey: [UInt8](repeating: 2, count: 32)))
    }

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    func transfers() -> FriendFileTransfers {
        FriendFileTransfers(
            verdictTimeout: .seconds(60), progressInterval: .milliseconds(200), maxTransfers: 64,
            maxIncomingSize: 1 << 30, offerTimeout: .seconds(300), maxTransfersPerFriend: 3, stallTimeout: .seconds(60))
    }

    func offer(_ files: inout FriendFileTransfers, from sender: UserId, number: UInt32, size: UInt64 = 100_000)
        -> [FriendFileTransfers.FileEffect]
    {
        let sha = [UInt8](repeating: UInt8(number), count: 32)
        return files.offered(
            FileSlot(friend: sender == friend ? 1 : 2, file: number), from: sender, kindIsData: true, size: size,
            name: "f\(number)", sha256: sha, now: at(0)
        ) { _, _ in true }
    }

    /// One friend cannot take every place: its fourth file is refused, another friend's is not.
    @Test func aFriendHasAFewPlacesNotAll() {
        var files = transfers()
        for number in 0..<3 { _ = offer(&files, from: friend, number: UInt32(number)) }
        let fourth = FriendFileTransfersTests.words(offer(&files, from: friend, number: 3))
        #expect(fourth.contains("refused offer: 3 of your files are under way here, at most 3"))
        let others = FriendFileTransfersTests.words(offer(&files, from: other, number: 9))
        #expect(others == ["offered f9 100000"])
    }

    /// An accepted file that stops moving ends after the stall timeout; its
    /// partial file stays for a resume; moving files stay.
    @Test func aStalledFileEndsAndKeepsItsBytes() throws {
        var files = transfers()
        _ = offer(&files, from: friend, number: 1)
        let key = FileTransferKey(friend: friend, sha256: [UInt8](repeating: 1, count: 32), outgoing: false)
        let directory = NSTemporaryDirectory() + "stall-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (partial, _) = try #require(PartialFile.open(directory: directory, key: key, size: 100_000))
        _ = files.accepted(key, into: directory, partial: partial, have: 0, now: at(1)) { _, _ in true }
        #expect(files.reservedIncomingBytes == 100_000)
        _ = files.chunk(FileSlot(friend: 1, file: 1), position: 0, count: 1000, now: at(30)) { _ in true }
        #expect(files.reservedIncomingBytes == 99_000)
        #expect(files.expire(now: at(89)).isEmpty)  // 59 s after the last chunk
        let ended = FriendFileTransfersTests.words(files.expire(now: at(91)))
        #expect(
            ended == [
                "verdict failed stalled: nothing arrived for 60.0 seconds", "control 1 cancel", "keep partial",
                "failed: stalled: nothing arrived for 60.0 seconds",
            ])
        #expect(files.incoming.isEmpty && files.reservedIncomingBytes == 0)
    }

    /// Partial files past their age go, then the oldest until the rest fits; those in use stay.
    @Test func partialFilesAreBoundedInAgeAndBytes() throws {
        let directory = NSTemporaryDirectory() + "sweep-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let folder = directory + "/" + PartialFile.folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let now = Date()
        func make(_ name: String, bytes: Int, age: TimeInterval) throws -> String {
            let path = folder + "/" + name + ".part"
            try Data(count: bytes).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.modificationDate: now - age], ofItemAtPath: path)
            return path
        }
        let ancient = try make("ancient", bytes: 10, age: 8 * 86400)
        let old = try make("old", bytes: 600, age: 3600)
        let busy = try make("busy", bytes: 900, age: 7200)
        let recent = try make("recent", bytes: 600, age: 60)
        let deleted = PartialFile.sweep(
            directory: directory, maxAge: .seconds(7 * 86400), maxBytes: 1000, keeping: [busy])
        let exists = { (path: String) in FileManager.default.fileExists(atPath: path) }
        #expect(deleted == 2 && !exists(ancient) && !exists(old) && exists(recent) && exists(busy))
    }
}
