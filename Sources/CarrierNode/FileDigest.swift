import FileSafety

#if canImport(Glibc)
    import Glibc
#endif

/// Files to send, opened and hashed off the node's actor: toxcore's path
/// (`Carrier.sendFile`) and the direct one (CarrierFiles) share it, and the
/// receivers' checks hash the same way.
public enum FileDigest {
    /// Hashes on a thread of its own (`Sha256.file`: 1 MiB blocks with `pread`, no whole-file buffer): a large file takes seconds.
    public static func sha256Detached(fd: Int32, size: UInt64) async -> [UInt8]? {
        await Task.detached(priority: .utility) { Sha256.file(fd: fd, size: size) }.value
    }

    /// A received file's SHA-256: the one taken as its bytes were written
    /// (`PartialFile.sha256AsWritten`), or else read back from `fd` on a thread
    /// of its own; nil if it cannot be read.
    public static func sha256(written: [UInt8]?, fd: Int32, size: UInt64) async -> [UInt8]? {
        if let written { return written }
        return await sha256Detached(fd: fd, size: size)
    }

    /// Opens `path` for reading and hashes it: its descriptor (the caller
    /// closes it), size and SHA-256. Throws, with nothing left open, for a
    /// file that cannot be opened or read or is not a regular file.
    public static func openHashed(_ path: String) async throws(CarrierError) -> (
        fd: Int32, size: UInt64, sha256: [UInt8]
    ) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .invalidArgument("cannot open \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .invalidArgument("\(path) is not a regular file")
        }
        let size = UInt64(info.st_size)
        guard let sha256 = await sha256Detached(fd: fd, size: size) else {
            close(fd)
            throw .invalidArgument("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        return (fd, size, sha256)
    }
}
