#if canImport(Glibc)
    import Glibc
#endif

/// Writes that survive a crash whole or not at all: the bytes go to a
/// temporary name, are fsynced, renamed over the target, and the folder is
/// fsynced. A crash leaves the old file or the new one, never a torn one.
enum DurableFile {
    static func write(_ path: String, _ bytes: [UInt8], in directory: String) throws(CarrierError) {
        let temporary = path + ".tmp"
        // A new file of our own: one left by a crash is removed first (a link
        // by its name, not what it points to), and O_EXCL|O_NOFOLLOW refuses
        // whatever appears there in between instead of writing through it.
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .storage("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        var written = 0
        var failed = false
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                failed = true
                break
            }
            written += count
        }
        let synced = !failed && fsync(fd) == 0
        close(fd)
        guard synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw .storage("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        let directoryFd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFd >= 0 {
            fsync(directoryFd)
            close(directoryFd)
        }
    }
}
