import FileSafety
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// toxcore names a transfer by friend and file number; the number changes
/// each time the file is offered again.
struct FileSlot: Hashable {
    var friend: UInt32
    var file: UInt32
}

/// A file this node sends.
struct OutgoingFile {
    enum Phase { case waitingForFriend, offered, sending, awaitingResult }
    var key: FileTransferKey
    var name: String
    var size: UInt64
    /// Its chunks, read in blocks; the node closes `reader.fd` at the end.
    let reader: ReadAhead
    var fd: Int32 { reader.fd }
    var phase = Phase.waitingForFriend
    var slot: FileSlot?
    /// Chunks toxcore asked for and that wait for room in its send queue, in order.
    var requested: [(position: UInt64, length: Int)] = []
    var sent: UInt64 = 0
    var pausedByUs = false
    var pausedByPeer = false
    var lastProgress: ContinuousClock.Instant?
    /// While awaiting the receiver's verdict: no verdict by then fails the transfer.
    var deadline: ContinuousClock.Instant?
    /// A direct session is offering to carry it on (`Carrier.beginHandOver`):
    /// the friend cancelling toxcore's transfer meanwhile may mean it took the
    /// session's offer, so that cancel is held until the session's answer.
    var handOver: HandOver?
    enum HandOver { case offered, cancelledByFriend }

    init(key: FileTransferKey, name: String, size: UInt64, fd: Int32) {
        self.key = key
        self.name = name
        self.size = size
        reader = ReadAhead(fd: fd)
    }
}

/// A file a friend sends to this node.
struct IncomingFile {
    enum Phase { case offered, receiving, interrupted, verifying }
    var key: FileTransferKey
    var name: String
    var size: UInt64
    var phase = Phase.offered
    var slot: FileSlot?
    /// Set once the application accepted: where the file goes.
    var directory: String?
    var partial: PartialFile?
    var received: UInt64 = 0
    var pausedByUs = false
    var pausedByPeer = false
    var lastProgress: ContinuousClock.Instant?
    /// When it was offered: an offer the application never answers is refused after `fileOfferTimeout`.
    var offeredAt: ContinuousClock.Instant
    /// The last sign of life (offered, accepted, a chunk): an accepted file
    /// with none for `stallTimeout` ends, its partial file kept for a resume.
    var lastActivity: ContinuousClock.Instant

    init(key: FileTransferKey, name: String, size: UInt64, slot: FileSlot?, offeredAt: ContinuousClock.Instant) {
        self.key = key
        self.name = name
        self.size = size
        self.slot = slot
        self.offeredAt = offeredAt
        lastActivity = offeredAt
    }

    /// Bytes still to arrive: what it will take of the disk.
    var outstanding: UInt64 { size > received ? size - received : 0 }
}

/// The bytes received so far, in `DIR/.carrier-partial/`, named after the
/// sender and the file's SHA-256 so a transfer offered again (after a
/// disconnect, or a restart of either side) finds them and resumes.
public struct PartialFile {
    /// The folder in the receive directory that holds partial files.
    public static let folder = ".carrier-partial"
    /// Where it is.
    public let path: String
    let file: BlockFile
    /// Chunks gathered into blocks before they reach the disk.
    private let writes: WriteBehind
    /// The SHA-256 of what was written in order from the first byte.
    private let running = RunningDigest()
    /// For hashing off the actor (`pread`); `flush` first.
    public var fd: Int32 { file.fileDescriptor }

    private init(path: String, file: BlockFile) {
        self.path = path
        self.file = file
        writes = WriteBehind(file: file)
    }

    /// Opens (or creates) the partial file; returns it and how many bytes it holds.
    public static func open(directory: String, key: FileTransferKey, size: UInt64) -> (PartialFile, UInt64)? {
        let folderPath = directory + "/" + folder
        mkdir(directory, 0o700)
        mkdir(folderPath, 0o700)
        let name = Hex.encode(Array(key.friend.publicKey.prefix(8))) + "-" + key.sha256Hex + ".part"
        let path = folderPath + "/" + name
        guard let file = BlockFile.openForUpdate(path), var have = try? file.size() else { return nil }
        if have > size {
            // Not the file we expect: start over.
            guard (try? file.truncate(to: 0)) != nil else { return nil }
            have = 0
        }
        return (PartialFile(path: path, file: file), have)
    }

    /// Bounds what `directory`'s partial files keep for resumes: those not
    /// written for `maxAge` go, then the oldest until they hold `maxBytes`
    /// at most. The files of transfers under way (`keeping`) stay. Returns
    /// how many it deleted. Without it, every stalled or cut transfer a
    /// friend started kept its bytes for good.
    @discardableResult
    public static func sweep(directory: String, maxAge: Duration, maxBytes: UInt64, keeping: Set<String> = [])
        -> Int
    {
        let folderPath = directory + "/" + folder
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folderPath) else { return 0 }
        let now = time(nil)
        var files: [(path: String, size: UInt64, modified: time_t)] = []
        for name in names where name.hasSuffix(".part") {
            let path = folderPath + "/" + name
            var info = stat()
            guard !keeping.contains(path), lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            files.append((path, UInt64(info.st_size), info.st_mtim.tv_sec))
        }
        var deleted = 0
        let tooOld = now - time_t(maxAge.components.seconds)
        var kept = files.sorted { $0.modified > $1.modified }  // newest first
        var total: UInt64 = 0
        kept = kept.filter { file in
            total += file.size
            guard file.modified >= tooOld, total <= maxBytes else {
                total -= file.size
                deleted += unlink(file.path) == 0 ? 1 : 0
                return false
            }
            return true
        }
        return deleted
    }

    /// Takes `data` for `position` (it reaches the disk in blocks: `flush`);
    /// false if the disk refused it or an earlier block.
    public func write(_ data: [UInt8], at position: UInt64) -> Bool {
        data.withUnsafeBytes { write($0, at: position) }
    }

    /// Takes the bytes at `raw` for `position`, as `write(_:at:)` does: a
    /// chunk still in toxcore's buffer (`ToxEventBuffer.chunkSinks`).
    public func write(_ raw: UnsafeRawBufferPointer, at position: UInt64) -> Bool {
        guard (try? writes.write(raw, at: position)) != nil else { return false }
        running.add(raw, at: position)
        return true
    }

    /// Puts what `write` took on the disk; false if the disk refused it.
    public func flush() -> Bool { (try? writes.flush()) != nil }

    /// Forgets what it held (a sender that cannot seek: start from the beginning).
    func empty() -> Bool {
        writes.discard()
        running.reset()
        return (try? file.truncate(to: 0)) != nil
    }

    /// The SHA-256 of its first `size` bytes (the caller checked that it
    /// holds that many) as they were written, if all of them came in order in
    /// this process (`RunningDigest`); nil otherwise (`FileDigest.sha256`
    /// then reads them back).
    public func sha256AsWritten(size: UInt64) -> [UInt8]? { running.digest(ofFirst: size) }

    /// Its size on disk after a `flush` (0 if it cannot be read).
    public var size: UInt64 {
        _ = flush()  // a failure shows as bytes missing
        return (try? file.size()) ?? 0
    }

    /// Closes it, keeping its bytes for a later resume. Bytes the disk
    /// refuses now are missing at its end, and a resume asks for them again.
    public func close() {
        _ = flush()
        writes.discard()
        file.close()
    }

    /// Closes and deletes it.
    public func remove() {
        writes.discard()
        file.close()
        unlink(path)
    }
}
