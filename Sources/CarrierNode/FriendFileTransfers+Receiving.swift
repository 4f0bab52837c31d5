/// Receiving files: offers, the application's answers, chunks, and the
/// check of what arrived (`FriendFileTransfers` holds the type and sending).
extension FriendFileTransfers {
    /// A friend offers a file (toxcore's `file_recv`); `kindIsData` false for avatars and the like.
    mutating func offered(
        _ slot: FileSlot, from friend: UserId, kindIsData: Bool, size: UInt64, name: String,
        sha256: [UInt8], now: ContinuousClock.Instant, seek: (FileSlot, UInt64) -> Bool
    ) -> [FileEffect] {
        guard kindIsData else { return [.control(slot, .cancel)] }  // this node uses data files only
        let key = FileTransferKey(friend: friend, sha256: sha256, outgoing: false)
        if var file = incoming[key] {
            // Offered again after a cut: carry on where it was.
            if let old = file.slot { slots[old] = nil }
            file.slot = slot
            file.lastActivity = now
            slots[slot] = key
            incoming[key] = file
            return file.directory != nil ? startReceiving(key, seek: seek) : []
        }
        let fromFriend = incoming.keys.filter { $0.friend == friend }.count
        guard incoming.count < maxTransfers, fromFriend < maxTransfersPerFriend, size <= maxIncomingSize else {
            let reason =
                size > maxIncomingSize
                ? "the file is larger than \(maxIncomingSize) bytes"
                : fromFriend >= maxTransfersPerFriend
                    ? "\(fromFriend) of your files are under way here, at most \(maxTransfersPerFriend)"
                    : "too many transfers at once"
            return [
                .verdict(key, .refused, reason: reason), .control(slot, .cancel), .refusedOffer(friend, reason: reason),
            ]
        }
        incoming[key] = IncomingFile(key: key, name: name, size: size, slot: slot, offeredAt: now)
        slots[slot] = key
        return [.emit(.offered(FileOffer(key: key, name: name, size: size)))]
    }

    /// The offer `key`, if it is one the application has not answered.
    func openOffer(_ key: FileTransferKey) -> IncomingFile? {
        guard let file = incoming[key], file.directory == nil else { return nil }
        return file
    }

    /// The application accepted the offer into `directory`, where `partial` already holds `have` bytes.
    mutating func accepted(
        _ key: FileTransferKey, into directory: String, partial: PartialFile, have: UInt64,
        now: ContinuousClock.Instant? = nil, seek: (FileSlot, UInt64) -> Bool
    ) -> [FileEffect] {
        guard var file = openOffer(key) else { return [.discard(partial, keep: true)] }
        file.directory = directory
        if let now { file.lastActivity = now }
        file.partial = partial
        file.received = have
        incoming[key] = file
        return startReceiving(key, seek: seek)
    }

    /// The application refused the offer.
    mutating func refused(_ key: FileTransferKey, reason: String?) -> [FileEffect] {
        guard let file = openOffer(key) else { return [] }
        return [.verdict(key, .refused, reason: reason ?? "refused")] + cancel(file.slot)
            + finishIncoming(key, .cancelled(byPeer: false, reason: reason))
    }

    /// Seeks past the bytes on disk (`seek`: toxcore) and tells the sender to go (RESUME).
    private mutating func startReceiving(_ key: FileTransferKey, seek: (FileSlot, UInt64) -> Bool) -> [FileEffect] {
        guard var file = incoming[key], let slot = file.slot else {
            // Accepted while the friend is away: starts when the file is offered again.
            incoming[key]?.phase = .interrupted
            return []
        }
        if file.received > 0, !seek(slot, file.received) {
            file.received = 0
            _ = file.partial?.empty()
        }
        file.phase = .receiving
        incoming[key] = file
        return [.control(slot, .resume), .emit(.accepted(key, offset: file.received)), .activity]
    }

    /// A chunk of a file we receive (empty: the sender says it is all there).
    /// `write` puts the bytes on disk (the empty last one: all that is still
    /// in memory) and says whether it could.
    mutating func chunk(
        _ slot: FileSlot, position: UInt64, count: Int, now: ContinuousClock.Instant,
        write: (PartialFile) -> Bool
    ) -> [FileEffect] {
        guard let key = slots[slot], var file = incoming[key], let partial = file.partial else { return [] }
        let end = position + UInt64(count)
        guard end <= file.size, write(partial) else {
            return failReceiving(
                key, slot, end > file.size ? "the sender sent more than the announced size" : Self.cannotWrite)
        }
        guard count > 0 else {
            slots[slot] = nil
            file.slot = nil
            file.phase = .verifying
            incoming[key] = file
            return progress(key, now: now, force: true) + [.verify(key, partial)]
        }
        file.received = max(file.received, end)
        file.lastActivity = now
        incoming[key] = file
        return progress(key, now: now)
    }

    /// The files whose chunks may be written inside toxcore's receive
    /// callback (`ToxEventBuffer.chunkSinks`), by slot: those being received
    /// into a partial file, with their announced size. A chunk then costs a
    /// copy into the file's block and no event: at 40 MB/s a receiver copied
    /// each 1,371-byte chunk into an array, queued it, and looked its transfer
    /// up three times, and spent half as much CPU again per MB as raw toxcore's.
    var directChunkSinks: [FileSlot: ChunkSink] {
        var sinks: [FileSlot: ChunkSink] = [:]
        for file in incoming.values where file.phase == .receiving {
            if let slot = file.slot, let partial = file.partial {
                sinks[slot] = ChunkSink(file: partial, size: file.size)
            }
        }
        return sinks
    }

    /// Chunks of a file we receive were written inside toxcore's callback
    /// (`directChunkSinks`), the last ending at `end`; `written` false: the
    /// last of them could not be written, and the transfer fails.
    mutating func chunksWritten(_ slot: FileSlot, end: UInt64, written: Bool, now: ContinuousClock.Instant)
        -> [FileEffect]
    {
        guard let key = slots[slot], let received = incoming[key]?.received else { return [] }
        guard written else { return failReceiving(key, slot, Self.cannotWrite) }
        incoming[key]?.received = max(received, end)
        incoming[key]?.lastActivity = now
        return progress(key, now: now)
    }

    /// The received file checked (`verify`): its size and SHA-256, or nil if it could not be read.
    /// On a match the partial is handed back to be placed (`placed` follows).
    mutating func verified(_ key: FileTransferKey, size: UInt64, sha256: [UInt8]?) -> (PartialFile?, [FileEffect]) {
        guard let file = incoming[key], let partial = file.partial else { return (nil, []) }  // cancelled meanwhile
        guard size == file.size else {
            return (nil, failVerification(key, "\(size) bytes arrived of \(file.size) announced"))
        }
        guard sha256 == key.sha256 else {
            return (nil, failVerification(key, "the file's SHA-256 does not match what the sender announced"))
        }
        incoming[key]?.partial = nil
        return (partial, [])
    }

    /// The verified file is at `path` now (or could not be stored: `failure`).
    mutating func placed(_ key: FileTransferKey, at path: String?, failure: String?) -> [FileEffect] {
        guard let file = incoming[key] else { return [] }
        guard let path else {
            return [.verdict(key, .failed, reason: "cannot store the file")]
                + finishIncoming(key, .failed(failure ?? "cannot store the file"))
        }
        return [.verdict(key, .completed, reason: nil)] + finishIncoming(key, .completed(path: path, bytes: file.size))
    }

    private static let cannotWrite = "cannot write the file"

    /// A file being received fails on `slot`: the sender hears why, toxcore's transfer is cancelled.
    private mutating func failReceiving(_ key: FileTransferKey, _ slot: FileSlot, _ reason: String) -> [FileEffect] {
        [.verdict(key, .failed, reason: reason)] + cancel(slot) + finishIncoming(key, .failed(reason))
    }

    private mutating func failVerification(_ key: FileTransferKey, _ reason: String) -> [FileEffect] {
        [.verdict(key, .failed, reason: reason)] + finishIncoming(key, .failed(reason))
    }

    mutating func finishIncoming(_ key: FileTransferKey, _ outcome: FileTransferOutcome) -> [FileEffect] {
        guard let file = incoming.removeValue(forKey: key) else { return [] }
        if let slot = file.slot { slots[slot] = nil }
        // Only a finished file is kept; what is cancelled or failed goes.
        return (file.partial.map { [.discard($0, keep: false)] } ?? []) + [.emit(.finished(key, outcome))]
    }
}
