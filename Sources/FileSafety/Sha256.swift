import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// SHA-256 on OpenSSL: incremental, of a byte array, or of a whole file. The
/// one SHA-256 of the package (files between friends, files over a data
/// channel, the node's stored state and Express requests).
public final class Sha256 {
    private let context: OpaquePointer?

    /// A digest with nothing in it yet.
    public init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds bytes.
    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Adds bytes without copying them.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        _ = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
    }

    /// The 32-byte digest of everything added.
    public func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return digest
    }

    /// The digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        let hash = Sha256()
        hash.update(bytes)
        return hash.finish()
    }

    /// The digest of the first `size` bytes of an open file, read in 1 MiB
    /// blocks with `pread` (its position is left alone); nil if it cannot be read.
    public static func file(fd: Int32, size: UInt64) -> [UInt8]? {
        let hash = Sha256()
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer { block.deallocate() }
        var offset: UInt64 = 0
        while offset < size {
            let want = Int(min(UInt64(block.count), size - offset))
            let count = pread(fd, block.baseAddress, want, off_t(offset))
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            hash.update(UnsafeRawBufferPointer(rebasing: block[0..<count]))
            offset += UInt64(count)
        }
        return hash.finish()
    }

    /// Lowercase hex of bytes (how digests are shown and compared).
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
    }
}
