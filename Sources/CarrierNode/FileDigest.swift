import FileSafety

/// SHA-256 of a whole file, off the node's actor.
enum FileDigest {
    /// Hashes on a thread of its own (`Sha256.file`: 1 MiB blocks with `pread`, no whole-file buffer): a large file takes seconds.
    static func sha256Detached(fd: Int32, size: UInt64) async -> [UInt8]? {
        await Task.detached(priority: .utility) { Sha256.file(fd: fd, size: size) }.value
    }
}
