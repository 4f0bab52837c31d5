import CSodium

#if canImport(Glibc)
    import Glibc
#endif

/// SHA-256 of a whole file, read in 1 MiB blocks with `pread` (no whole-file buffer).
enum FileDigest {
    static func sha256(fd: Int32, size: UInt64) -> [UInt8]? {
        var state = crypto_hash_sha256_state()
        crypto_hash_sha256_init(&state)
        var block = [UInt8](repeating: 0, count: 1 << 20)
        var offset: UInt64 = 0
        while offset < size {
            let want = Int(min(UInt64(block.count), size - offset))
            let count = block.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            crypto_hash_sha256_update(&state, block, UInt64(count))
            offset += UInt64(count)
        }
        var digest = [UInt8](repeating: 0, count: 32)
        crypto_hash_sha256_final(&state, &digest)
        return digest
    }

    /// Hashes on a thread of its own, off the node's actor: a large file takes seconds.
    static func sha256Detached(fd: Int32, size: UInt64) async -> [UInt8]? {
        await Task.detached(priority: .utility) { sha256(fd: fd, size: size) }.value
    }
}
