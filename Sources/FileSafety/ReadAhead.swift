#if canImport(Glibc)
    import Glibc
#endif

/// Reads a file in blocks for a sender that is asked for it in small pieces.
///
/// toxcore asks a sender for chunks of at most 1,371 bytes, about 25,000 a
/// second at 30 MB/s; a `pread` each cost the sending node a system call per
/// chunk. Here a piece inside the block already read is lent out of it, and
/// a piece outside it reads the block at that piece (64 KiB, or to the end).
/// The block is kept as it was read: a file that changes while it is sent is
/// caught by the receiver's SHA-256, as it was before. Owned by one actor at
/// a time; not thread-safe. It does not own the descriptor.
public final class ReadAhead {
    /// The file read (closed by its owner).
    public let fd: Int32
    private let blockSize: Int
    private var block: [UInt8] = []
    private var blockStart: UInt64 = 0

    /// Reads `fd` in blocks of `blockSize` bytes (64 KiB: 48 chunks a read).
    public init(fd: Int32, blockSize: Int = 64 << 10) {
        self.fd = fd
        self.blockSize = max(blockSize, 1)
    }

    /// Calls `body` with the `length` bytes at `position` and returns what it
    /// returns; nil without calling it when the file has fewer bytes there
    /// (it shrank, or a read failed).
    public func withBytes<Result>(
        at position: UInt64, length: Int, _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result? {
        guard length >= 0 else { return nil }
        let end = position + UInt64(length)
        if position < blockStart || end > blockStart + UInt64(block.count) {
            guard fill(at: position, atLeast: length) else { return nil }
        }
        let offset = Int(position - blockStart)
        return block.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + length)])) }
    }

    /// Reads the block at `position`; false if fewer than `atLeast` bytes are there.
    private func fill(at position: UInt64, atLeast: Int) -> Bool {
        let size = max(blockSize, atLeast)
        if block.count != size { block = [UInt8](repeating: 0, count: size) }
        let got = block.withUnsafeMutableBytes { bytes -> Int in
            guard let base = bytes.baseAddress else { return 0 }
            return BlockFile.readAll(into: base, count: size) { pointer, left, done in
                pread(fd, pointer, left, off_t(position) + off_t(done))
            }.got  // a failed read: fewer bytes, as at the end
        }
        blockStart = position
        if got < size { block.removeLast(size - got) }
        return got >= atLeast
    }
}
