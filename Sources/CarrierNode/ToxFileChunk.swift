import CToxcore

#if canImport(Glibc)
    import Glibc
#endif

/// One chunk of a file going out over toxcore: read from the file with
/// `pread` and handed to `tox_file_send_chunk`. Both places that send chunks
/// use it: toxcore's chunk-request callback (`ToxEventBuffer`) and the
/// actor's queue of requests that had to wait (`Carrier.flushFileChunks`).
enum ToxFileChunk {
    /// How one chunk went.
    enum Outcome: Equatable {
        case sent
        /// The file had fewer bytes at `position` than asked (it shrank, or a read failed).
        case unreadable
        /// Toxcore's send queue is full: try again after the next iteration.
        case queueFull
        /// Toxcore refused it for another reason (the transfer is gone).
        case refused
    }

    /// Reads `length` bytes at `position` of `fd` into `scratch` (grown as
    /// needed, kept by the caller to spare an allocation per chunk) and sends them.
    static func send(
        _ tox: OpaquePointer, _ slot: FileSlot, fd: Int32, position: UInt64, length: Int, scratch: inout [UInt8]
    ) -> Outcome {
        if scratch.count < length { scratch = [UInt8](repeating: 0, count: length) }
        return scratch.withUnsafeMutableBytes { bytes -> Outcome in
            guard let base = bytes.baseAddress, pread(fd, base, length, off_t(position)) == length else {
                return .unreadable
            }
            var error = TOX_ERR_FILE_SEND_CHUNK_OK
            _ = tox_file_send_chunk(
                tox, slot.friend, slot.file, position, base.assumingMemoryBound(to: UInt8.self), length, &error)
            switch error {
            case TOX_ERR_FILE_SEND_CHUNK_OK: return .sent
            case TOX_ERR_FILE_SEND_CHUNK_SENDQ: return .queueFull
            default: return .refused
            }
        }
    }
}
