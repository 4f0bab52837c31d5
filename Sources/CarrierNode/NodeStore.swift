import CSodium
import FileSafety
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The node's state on disk: `carrier.data` in the data directory.
///
/// Layout (all integers big-endian):
/// `magic "CRRN" | version u32 = 1 | toxLength u32 | extraLength u32 |
///  sha256(tox || extra) | tox savedata | extra (JSON)`.
/// The toxcore savedata holds the key pair, nospam, friends and profile; the
/// extra part holds what toxcore does not keep (labels, requests awaiting
/// acceptance). Writes go to a temporary file that is fsynced and renamed over
/// the old one, then the directory is fsynced: a crash leaves the old or the
/// new file, never a torn one. Mode 0600, directory 0700.
struct NodeStore {
    static let fileName = "carrier.data"
    static let magic: [UInt8] = Array("CRRN".utf8)
    static let version: UInt32 = 1
    static let headerSize = 4 + 4 + 4 + 4 + 32
    /// A savedata larger than this is not ours (toxcore saves are a few KB per friend).
    static let maxFileSize = 64 << 20

    struct Extra: Codable, Equatable {
        var labels: [String: String] = [:]
        var awaitingAcceptance: [String] = []
    }

    struct Contents: Equatable {
        var toxSavedata: [UInt8]
        var extra: Extra
    }

    let directory: String
    var path: String { directory + "/" + Self.fileName }

    init(directory: String) { self.directory = directory }

    /// Takes the directory's lock (`carrier.lock`, holding the owner's pid) so
    /// two processes never run one identity; released when `fd` is closed.
    func lock() throws(CarrierError) -> Int32 {
        try ensureDirectory()
        try Self.checkPrivate(directory)
        let lockPath = directory + "/carrier.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .storage("cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = read(fd, &buffer, buffer.count)
            let owner = String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self).trimmingCharacters(
                in: .whitespacesAndNewlines)
            close(fd)
            throw .storage(
                "\(directory) is in use by another carrier process\(owner.isEmpty ? "" : " (pid \(owner))"); stop it or use another --data"
            )
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        return fd
    }

    /// Releases the lock taken by `lock()` and closes its descriptor.
    ///
    /// `LOCK_UN` first: a flock belongs to the open file description, and a child
    /// that some other thread forks holds a copy of the descriptor until it execs
    /// (O_CLOEXEC closes it only then), so `close` alone could leave the directory
    /// locked for that moment and a node started right after would be refused.
    static func unlock(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
        close(fd)
    }

    /// The saved state, or nil when the directory holds none yet.
    func load() throws(CarrierError) -> Contents? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .storage("cannot read \(path)")
        }
        guard data.count <= Self.maxFileSize else { throw .storage("\(path) is too large to be a node state file") }
        return try Self.decode(Array(data), path: path)
    }

    func save(_ contents: Contents) throws(CarrierError) {
        try ensureDirectory()
        let bytes = Self.encode(contents)
        try DurableFile.write(path, bytes, in: directory)
    }

    /// Refuses a data directory another user owns or may write into: whoever
    /// can write there can swap the state file, the lock or the control socket.
    static func checkPrivate(_ directory: String) throws(CarrierError) {
        var status = stat()
        guard stat(directory, &status) == 0 else {
            throw .storage("cannot read \(directory): \(String(cString: strerror(errno)))")
        }
        if status.st_uid != getuid() {
            throw .storage(
                "\(directory) belongs to another user (uid \(status.st_uid)): use a data directory of your own")
        }
        if status.st_mode & 0o022 != 0 {
            throw .storage(
                "\(directory) may be written by other users (mode \(String(status.st_mode & 0o777, radix: 8))): "
                    + "chmod 700 it, or use another --data")
        }
    }

    private func ensureDirectory() throws(CarrierError) {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .storage("cannot create \(directory): \(error.localizedDescription)")
        }
    }

    static func encode(_ contents: Contents) -> [UInt8] {
        let extra = (try? JSONEncoder().encode(contents.extra)).map { Array($0) } ?? Array("{}".utf8)
        var bytes = magic
        for value in [version, UInt32(contents.toxSavedata.count), UInt32(extra.count)] {
            bytes += withUnsafeBytes(of: value.bigEndian) { Array($0) }
        }
        bytes += sha256(contents.toxSavedata + extra)
        return bytes + contents.toxSavedata + extra
    }

    static func decode(_ bytes: [UInt8], path: String) throws(CarrierError) -> Contents {
        func field(_ offset: Int) -> Int {
            bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        }
        guard bytes.count >= headerSize, Array(bytes[0..<4]) == magic else {
            throw .storage("\(path) is not a node state file (bad magic); move it away to start a new identity")
        }
        guard UInt32(field(4)) == version else { throw .storage("\(path) has unsupported version \(field(4))") }
        let toxLength = field(8)
        let extraLength = field(12)
        guard headerSize + toxLength + extraLength == bytes.count else {
            throw .storage("\(path) is truncated or corrupt (lengths do not match its size)")
        }
        let body = Array(bytes[headerSize...])
        guard sha256(body) == Array(bytes[16..<48]) else {
            throw .storage("\(path) is corrupt (checksum mismatch); restore it from a backup or move it away")
        }
        let tox = Array(body[0..<toxLength])
        guard let extra = try? JSONDecoder().decode(Extra.self, from: Data(body[toxLength...])) else {
            throw .storage("\(path) has an unreadable extra section")
        }
        return Contents(toxSavedata: tox, extra: extra)
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] { Sha256.digest(bytes) }
}
