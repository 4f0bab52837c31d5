import CToxcore
import FileSafety

/// One chunk of a file going out over toxcore: lent out of the file's
/// `ReadAhead` block and handed to `tox_file_send_chunk`. Both places that
/// send chunks use it: toxcore's chunk-request callback (`ToxEventBuffer`)
/// and the actor's queue of requests that had to wait (`Carrier.flushFileChunks`).
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

    /// Sends the `length` bytes at `position` of the file `reader` reads.
    static func send(_ tox: OpaquePointer, _ slot: FileSlot, reader: ReadAhead, position: UInt64, length: Int)
        -> Outcome
    {
        let outcome = reader.withBytes(at: position, length: length) { bytes -> Outcome in
            var error = TOX_ERR_FILE_SEND_CHUNK_OK
            _ = tox_file_send_chunk(
                tox, slot.friend, slot.file, position, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                bytes.count, &error)
            switch error {
            case TOX_ERR_FILE_SEND_CHUNK_OK: return .sent
            case TOX_ERR_FILE_SEND_CHUNK_SENDQ: return .queueFull
            default: return .refused
            }
        }
        return outcome ?? .unreadable
    }
}
