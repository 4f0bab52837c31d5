import CToxcore
import FileSafety

#if canImport(Glibc)
    import Glibc
#endif

/// Files between friends on toxcore's file transfer (`tox_file_*`), outside calls.
///
/// The sender offers a file whose toxcore file id is its SHA-256; the
/// receiver accepts (into a directory) or refuses. Bytes go to a partial file
/// named after the sender and the SHA-256, so when a transfer is cut (the
/// friend goes offline, either process restarts) and the file is offered
/// again, the receiver seeks past what it has (`tox_file_seek`). At the end
/// the receiver checks size and SHA-256, moves the file into place under a
/// name that replaces nothing, and tells the sender (`ExtraPacket.fileResult`).
/// Events: `CarrierEvent.file`, exactly one `.finished` per transfer.
///
/// The transfers' states and rules are `FriendFileTransfers` (pure); this
/// file drives it: it calls toxcore, reads, writes and hashes the files, and
/// carries out what the state machine says, in its order.
extension Carrier {
    /// The sender waits this long for the receiver's verdict after the last byte.
    static let fileVerdictTimeout = Duration.seconds(60)
    /// Progress events come at most this often per transfer.
    static let fileProgressInterval = Duration.milliseconds(200)
    /// Transfers this node keeps at once, each direction (toxcore allows 256 per friend).
    public static let maxFileTransfers = 64

    /// Offers the file at `path` to `friend` (under `name`, default its last
    /// path component). Returns once the file is hashed; the transfer goes on
    /// in the background (events `.file`). A friend who is offline gets the
    /// offer when it connects.
    public func sendFile(at path: String, to friend: UserId, name: String? = nil) async throws(CarrierError)
        -> FileTransferKey
    {
        // Refused before the file is read for its hash, and again once it is (the node may have stopped meanwhile).
        if let refusal = sendRefusal(to: friend) { throw refusal }
        let (fd, size, sha256) = try await FileDigest.openHashed(path)
        return try sendFile(
            descriptor: fd, size: size, sha256: sha256, to: friend,
            name: name ?? String(path.split(separator: "/").last ?? "file"))
    }

    /// Offers a file the caller has open and hashed already (a direct send
    /// falling back to toxcore hashed it once): the node owns `fd` from here
    /// and closes it whatever happens, this call throwing included.
    public func sendFile(descriptor fd: Int32, size: UInt64, sha256: [UInt8], to friend: UserId, name: String)
        throws(CarrierError) -> FileTransferKey
    {
        if let refusal = sendRefusal(to: friend) {
            close(fd)
            throw refusal
        }
        let key = FileTransferKey(friend: friend, sha256: sha256, outgoing: true)
        let fileName = SafeFileName.truncated(name, toBytes: Int(TOX_MAX_FILENAME_LENGTH))
        if let refusal = files.add(OutgoingFile(key: key, name: fileName, size: size, fd: fd)) {
            close(fd)
            throw .invalidArgument(refusal)
        }
        offerIfConnected(key)
        noteActivity()
        return key
    }

    /// Why a file cannot be offered to `friend` now, if it cannot.
    private func sendRefusal(to friend: UserId) -> CarrierError? {
        if killed { return .notRunning }
        if friends[friend] == nil { return .notFriend(friend.description) }
        if files.outgoing.count >= Self.maxFileTransfers {
            return .queueFull("\(Self.maxFileTransfers) files are being sent already")
        }
        return nil
    }

    /// Accepts an offered file into `directory` (created if missing). A file
    /// received in part before resumes from its bytes.
    public func acceptFile(_ key: FileTransferKey, into directory: String) throws(CarrierError) {
        guard let file = files.openOffer(key) else { throw .invalidArgument("no such offer: \(key)") }
        // Old partial files first: what stalled or was cut long ago gives its room back.
        PartialFile.sweep(
            directory: directory, maxAge: options.partialFilesMaxAge, maxBytes: options.partialFilesMaxBytes,
            keeping: Set(files.incoming.values.compactMap { $0.partial?.path }))
        // Room for this file beside what the files already accepted still need, and the reserve.
        let needed = file.size + files.reservedIncomingBytes + options.diskReserve
        if let available = Self.freeBytes(directory), available < needed {
            throw .storage(
                "\(directory) has \(available) bytes free; the file needs \(file.size), the files under way "
                    + "\(files.reservedIncomingBytes) more, and \(options.diskReserve) stay free")
        }
        guard let (partial, have) = PartialFile.open(directory: directory, key: key, size: file.size) else {
            throw .storage("cannot write in \(directory): \(String(cString: strerror(errno)))")
        }
        carryOut(files.accepted(key, into: directory, partial: partial, have: have, now: clock.now, seek: seek))
    }

    /// Refuses an offered file; the sender's transfer ends `cancelled` with `reason`.
    public func refuseFile(_ key: FileTransferKey, reason: String? = nil) throws(CarrierError) {
        guard files.openOffer(key) != nil else { throw .invalidArgument("no such offer: \(key)") }
        carryOut(files.refused(key, reason: reason))
    }

    /// Cancels a transfer in either direction; a partial download is deleted.
    public func cancelFile(_ key: FileTransferKey) throws(CarrierError) {
        guard let effects = files.cancel(key) else { throw .invalidArgument("no transfer \(key)") }
        carryOut(effects)
    }

    /// Ends a moving transfer on toxcore, with no `.finished` event, so that
    /// a direct session carries it on (`FriendFiles` does this when a session
    /// comes up mid-transfer): the receiver keeps its partial file, whose
    /// bytes the session resumes from. The friend's side sees toxcore's
    /// transfer cancelled. Nil when the transfer cannot be handed over now
    /// (none, not accepted yet, paused by this side, or being verified).
    public func handOverFile(_ key: FileTransferKey) -> FileHandOver? {
        guard let (handOver, effects) = files.handOver(key) else { return nil }
        carryOut(effects)
        return handOver
    }

    /// A direct session is about to offer to carry on the outgoing `key`
    /// (the friend's node, taking it, cancels toxcore's transfer): a cancel
    /// from the friend is held until `handOverFile` or `endHandOver`. False
    /// when no such transfer is moving.
    public func beginHandOver(_ key: FileTransferKey) -> Bool { files.beginHandOver(key) }

    /// The session did not carry `key` on: toxcore goes on with it, or ends it
    /// as cancelled by the friend if the friend cancelled it meanwhile.
    public func endHandOver(_ key: FileTransferKey) { carryOut(files.endHandOver(key)) }

    /// Pauses a transfer that is moving; the friend sees `.paused(byPeer: true)`.
    public func pauseFile(_ key: FileTransferKey) throws(CarrierError) {
        try setPaused(key, true)
    }

    /// Resumes a transfer this side paused.
    public func resumeFile(_ key: FileTransferKey) throws(CarrierError) {
        try setPaused(key, false)
    }

    /// Every transfer not yet finished, as it stands.
    public func fileTransfers() -> [FileTransferStatus] { files.statuses }

    var hasFileTraffic: Bool { files.hasTraffic }

    // MARK: Driving the state machine

    /// Does what the state machine says, in its order.
    private func carryOut(_ effects: [FriendFileTransfers.FileEffect]) {
        for effect in effects {
            switch effect {
            case .emit(let event): emit(.file(event))
            case .control(let slot, let control): self.control(slot, control)
            case .verdict(let key, let verdict, let reason): sendFileVerdict(key, verdict, reason: reason)
            case .verify(let key, let partial): Task { await self.verifyAndPlace(key, partial) }
            case .closeFile(let fd): close(fd)
            case .discard(let partial, let keep): if keep { partial.close() } else { partial.remove() }
            case .refusedOffer(let friend, let reason): drop(from: friend, "file offer refused: \(reason)")
            case .activity: noteActivity()
            }
        }
    }

    private func control(_ slot: FileSlot, _ control: FriendFileTransfers.FileControl) {
        guard !killed else { return }
        _ = tox_file_control(tox, slot.friend, slot.file, Self.toxControl(control), nil)
    }

    private static func toxControl(_ control: FriendFileTransfers.FileControl) -> Tox_File_Control {
        switch control {
        case .resume: TOX_FILE_CONTROL_RESUME
        case .pause: TOX_FILE_CONTROL_PAUSE
        case .cancel: TOX_FILE_CONTROL_CANCEL
        }
    }

    /// toxcore skips the bytes the receiver has (`tox_file_seek`); false if it would not.
    private func seek(_ slot: FileSlot, to position: UInt64) -> Bool {
        guard !killed else { return false }
        var error = TOX_ERR_FILE_SEEK_OK
        return tox_file_seek(tox, slot.friend, slot.file, position, &error)
    }

    private func offerIfConnected(_ key: FileTransferKey) {
        guard !killed, let state = friends[key.friend], state.connected, warmedUpForFiles(key.friend) else { return }
        let effects = files.offer(key, friendNumber: state.number) { file in
            var error = TOX_ERR_FILE_SEND_OK
            let name = Array(file.name.utf8)
            let number = tox_file_send(
                tox, state.number, UInt32(TOX_FILE_KIND_DATA.rawValue), file.size, key.sha256, name, name.count,
                &error)
            switch error {
            case TOX_ERR_FILE_SEND_OK: return .sent(fileNumber: number)
            case TOX_ERR_FILE_SEND_TOO_MANY: return .tooMany
            default: return .failed(code: error.rawValue)
            }
        }
        carryOut(effects)
    }

    /// Sends the chunks toxcore asked for, until its send queue is full.
    func flushFileChunks() {
        guard !killed else { return }
        for key in files.filesWithRequests {
            requests: while let request = files.nextRequest(key) {
                switch ToxFileChunk.send(
                    tox, request.slot, reader: request.reader, position: request.position, length: request.length)
                {
                case .sent: files.chunkSent(key)
                case .unreadable: return carryOut(files.readFailed(key, at: request.position))
                case .queueFull: break requests
                case .refused:
                    files.requestsGone(key)
                    break requests
                }
            }
            carryOut(files.progress(key, now: clock.now))
        }
    }

    /// Checks size and SHA-256 (as written, or read back off the actor), then stores the file under a free name.
    private func verifyAndPlace(_ key: FileTransferKey, _ partial: PartialFile) async {
        guard let expected = files.incoming[key]?.size else { return }
        let size = partial.size
        let fd = partial.fd
        let digest =
            size == expected
            ? await FileDigest.sha256(written: partial.sha256AsWritten(size: size), fd: fd, size: size) : nil
        let (verified, effects) = files.verified(key, size: size, sha256: digest)
        carryOut(effects)
        guard let verified, let file = files.incoming[key], let directory = file.directory else { return }
        verified.close()
        do {
            let path = try FilePlacement.place(verified.path, in: directory, as: file.name)
            carryOut(files.placed(key, at: path, failure: nil))
        } catch {
            unlink(verified.path)
            carryOut(files.placed(key, at: nil, failure: error.description))
        }
    }

    private func sendFileVerdict(_ key: FileTransferKey, _ verdict: ExtraPacket.FileVerdict, reason: String?) {
        guard let number = friends[key.friend]?.number else { return }
        let packet = ExtraPacket.fileResult(
            sha256: key.sha256, status: verdict.rawValue,
            reason: reason.map { SafeFileName.truncated($0, toBytes: ExtraPacket.maxReasonLength) })
        do { try enqueue(extra: packet, to: number, friend: key.friend) } catch {
            Self.log.warning("the verdict on \(key) did not go out: \(error)")
        }
        // Out before a CANCEL that may follow, so the sender reads the reason first.
        flushOutgoing()
    }

    // MARK: Events in

    func handleFileEvent(_ event: ToxEvent) {
        switch event {
        case .fileOffered(let slot, let kind, let size, let name, let fileId):
            guard let friend = friendIds[slot.friend] else { return }
            let safe = SafeFileName.make(String(decoding: name, as: UTF8.self))
            carryOut(
                files.offered(
                    slot, from: friend, kindIsData: kind == UInt32(TOX_FILE_KIND_DATA.rawValue), size: size,
                    name: safe, sha256: fileId, now: clock.now, seek: seek))
        case .fileControl(let slot, let control):
            switch control {
            case TOX_FILE_CONTROL_RESUME: carryOut(files.control(slot, .resume))
            case TOX_FILE_CONTROL_PAUSE: carryOut(files.control(slot, .pause))
            case TOX_FILE_CONTROL_CANCEL: carryOut(files.control(slot, .cancel))
            default: break
            }
        case .fileChunkRequest(let slot, let position, let length):
            carryOut(files.chunkRequested(slot, position: position, length: length, now: clock.now))
        case .fileChunkSent(let slot, let position, let length):
            carryOut(files.chunkSentDirectly(slot, position: position, length: length, now: clock.now))
        case .fileChunk(let slot, let position, let data):
            carryOut(
                files.chunk(slot, position: position, count: data.count, now: clock.now) {
                    data.isEmpty ? $0.flush() : $0.write(data, at: position)
                })
        case .fileChunksWritten(let slot, let end, let written):
            carryOut(files.chunksWritten(slot, end: end, written: written, now: clock.now))
        default:
            break
        }
    }

    func handleFilePacket(_ packet: ExtraPacket, from friend: UserId) {
        if case .fileResult(let sha256, let status, let reason) = packet {
            let key = FileTransferKey(friend: friend, sha256: sha256, outgoing: true)
            carryOut(files.verdict(key, status: status, reason: reason))
        }
    }

    private func setPaused(_ key: FileTransferKey, _ paused: Bool) throws(CarrierError) {
        guard files.contains(key) else { throw .invalidArgument("no transfer \(key)") }
        guard let slot = files.slot(of: key) else { throw .friendOffline(key.friend.description) }
        var error = TOX_ERR_FILE_CONTROL_OK
        guard tox_file_control(tox, slot.friend, slot.file, Self.toxControl(paused ? .pause : .resume), &error)
        else {
            if error == TOX_ERR_FILE_CONTROL_ALREADY_PAUSED || error == TOX_ERR_FILE_CONTROL_NOT_PAUSED { return }
            throw .tox(function: "tox_file_control", code: Int(error.rawValue))
        }
        carryOut(files.pausedByUs(key, paused))
    }

    /// A friend's link went up or down: offer waiting files, or mark moving ones interrupted.
    func fileLinkChanged(_ friend: UserId, connected: Bool) {
        guard connected else { return carryOut(files.linkDown(friend)) }
        offerWaitingFiles(to: friend)
    }

    /// Offers the files waiting for a friend, if it is connected and they may start.
    func offerWaitingFiles(to friend: UserId) {
        for key in files.waiting(for: friend) { offerIfConnected(key) }
    }

    /// Fails senders whose receiver never gave a verdict, and refuses offers the
    /// application left unanswered (they would hold one of the 64 places forever).
    func expireFiles(now: ContinuousClock.Instant) {
        carryOut(files.expire(now: now))
    }

    func closeAllFiles(reason: String) {
        carryOut(files.closeAll(reason: reason))
    }

    /// Bytes free for an unprivileged user on the file system of `directory`
    /// (or of its nearest existing parent); nil if it cannot be asked.
    public static func freeBytes(_ directory: String) -> UInt64? { FreeSpace.bytes(at: directory) }
}
