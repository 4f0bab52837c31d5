/// Writes that arrive in order, gathered into blocks before they reach a file.
///
/// toxcore hands a receiver its file in chunks of at most 1,371 bytes. One
/// `pwrite` each took an eighth of a receiving node's CPU at 30 MB/s (perf),
/// on two cores that the sender shares. Here bytes that continue the block
/// are copied into it, and the block is written when it is full, when a write
/// does not continue it, and at `flush`.
///
/// What is on disk is always a prefix of what was written, never a hole: a
/// write elsewhere first writes the block. So bytes still in the block when
/// the process dies are simply missing at the file's end, and a resume, which
/// starts at the file's size, asks for them again. Owned by one actor at a
/// time; not thread-safe.
public final class WriteBehind {
    /// The file written to.
    public let file: BlockFile
    /// The most bytes kept before they are written.
    public let capacity: Int
    private var block: [UInt8] = []
    private var blockStart: UInt64 = 0

    /// Bytes written to `file` in blocks of up to `capacity` (128 KiB: a
    /// hundred chunks a `pwrite`, and 8 MiB for 64 transfers at once).
    public init(file: BlockFile, capacity: Int = 128 << 10) {
        self.file = file
        self.capacity = max(capacity, 1)
    }

    /// How many bytes wait in the block.
    public var pending: Int { block.count }

    /// Takes `bytes` for `position`. A failure is of the block before them or
    /// of these bytes; either way both are dropped (the caller gives the file
    /// up), and the file ends before them.
    public func write(_ bytes: [UInt8], at position: UInt64) throws(BlockFile.Failure) {
        try bytes.withUnsafeBytes { raw in Result { () throws(BlockFile.Failure) in try write(raw, at: position) } }
            .get()
    }

    /// Takes the bytes at `raw` for `position`, as `write(_:at:)` does: for
    /// bytes still in a C library's buffer, copied once, into the block.
    public func write(_ raw: UnsafeRawBufferPointer, at position: UInt64) throws(BlockFile.Failure) {
        if !block.isEmpty, position != blockStart + UInt64(block.count) || block.count + raw.count > capacity {
            try flush()
        }
        if raw.count >= capacity {
            try file.write(raw, at: position)  // as large as a block already: no copy
            return
        }
        if block.isEmpty {
            blockStart = position
            block.reserveCapacity(capacity)
        }
        block.append(contentsOf: raw)
    }

    /// Writes the block now.
    public func flush() throws(BlockFile.Failure) {
        guard !block.isEmpty else { return }
        defer { block.removeAll(keepingCapacity: true) }
        try file.write(block, at: blockStart)
    }

    /// Forgets the block without writing it (the file is deleted or emptied),
    /// and gives its memory back.
    public func discard() { block = [] }
}
