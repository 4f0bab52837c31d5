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
/// name that replaces nothing, and tells the sender (`WirePacket.fileResult`).
/// Events: `CarrierEvent.file`, exactly one `.finished` per transfer.
extension Carrier {
    /// The sender waits this long for the receiver's verdict after the last byte.
    static let fileVerdictTimeout = Duration.seconds(60)
    /// Progress events come at most this often per transfer.
    static let fileProgressInterval = Duration.milliseconds(200)
    /// Transfers this node keeps at once, each direction (toxcore allows 256 per friend).
    static let maxFileTransfers = 64

    /// Offers the file at `path` to `friend` (under `name`, default its last
    /// path component). Returns once the file is hashed; the transfer goes on
    /// in the background (events `.file`). A friend who is offline gets the
    /// offer when it connects.
    public func sendFile(at path: String, to friend: UserId, name: String? = nil) async throws(CarrierError)
        -> FileTransferKey
    {
        try ensureAlive()
        guard friends[friend] != nil else { throw .notFriend(friend.description) }
        guard outgoingFiles.count < Self.maxFileTransfers else {
            throw .queueFull("\(Self.maxFileTransfers) files are being sent already")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .invalidArgument("cannot open \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .invalidArgument("\(path) is not a regular file")
        }
        let size = UInt64(info.st_size)
        let fileName = SafeFileName.truncated(
            name ?? String(path.split(separator: "/").last ?? "file"), toBytes: Int(TOX_MAX_FILENAME_LENGTH))
        guard let sha256 = await FileDigest.sha256Detached(fd: fd, size: size) else {
            close(fd)
            throw .invalidArgument("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        let key = FileTransferKey(friend: friend, sha256: sha256, outgoing: true)
        guard !killed, outgoingFiles[key] == nil else {
            close(fd)
            throw killed ? .notRunning : .invalidArgument("this file is already being sent to \(friend)")
        }
        outgoingFiles[key] = OutgoingFile(key: key, name: fileName, size: size, fd: fd)
        offerIfConnected(key)
        noteActivity()
        return key
    }

    /// Accepts an offered file into `directory` (created if missing). A file
    /// received in part before resumes from its bytes.
    public func acceptFile(_ key: FileTransferKey, into directory: String) throws(CarrierError) {
        guard var file = incomingFiles[key], file.directory == nil else {
            throw .invalidArgument("no such offer: \(key)")
        }
        if let available = Self.freeBytes(directory), available < file.size {
            throw .storage("\(directory) has \(available) bytes free, the file needs \(file.size)")
        }
        guard let (partial, have) = PartialFile.open(directory: directory, key: key, size: file.size) else {
            throw .storage("cannot write in \(directory): \(String(cString: strerror(errno)))")
        }
        file.directory = directory
        file.partial = partial
        file.received = have
        incomingFiles[key] = file
        startReceiving(key)
    }

    /// Refuses an offered file; the sender's transfer ends `cancelled` with `reason`.
    public func refuseFile(_ key: FileTransferKey, reason: String? = nil) throws(CarrierError) {
        guard let file = incomingFiles[key], file.directory == nil else {
            throw .invalidArgument("no such offer: \(key)")
        }
        sendFileVerdict(key, .refused, reason: reason ?? "refused")
        control(file.slot, TOX_FILE_CONTROL_CANCEL)
        finishIncoming(key, .cancelled(byPeer: false, reason: reason))
    }

    /// Cancels a transfer in either direction; a partial download is deleted.
    public func cancelFile(_ key: FileTransferKey) throws(CarrierError) {
        if let file = outgoingFiles[key] {
            control(file.slot, TOX_FILE_CONTROL_CANCEL)
            finishOutgoing(key, .cancelled(byPeer: false, reason: nil))
        } else if let file = incomingFiles[key] {
            control(file.slot, TOX_FILE_CONTROL_CANCEL)
            finishIncoming(key, .cancelled(byPeer: false, reason: nil))
        } else {
            throw .invalidArgument("no transfer \(key)")
        }
    }

    /// Pauses a transfer that is moving; the friend sees `.paused(byPeer: true)`.
    public func pauseFile(_ key: FileTransferKey) throws(CarrierError) {
        try setPaused(key, true)
    }

    /// Resumes a transfer this side paused.
    public func resumeFile(_ key: FileTransferKey) throws(CarrierError) {
        try setPaused(key, false)
    }

    /// Every transfer not yet finished, as it stands.
    public func fileTransfers() -> [FileTransferStatus] {
        let sending = outgoingFiles.values.map { file in
            let phase: FileTransferStatus.Phase =
                switch file.phase {
                case .waitingForFriend: .waitingForFriend
                case .offered: .offered
                case .sending: .transferring
                case .awaitingResult: .verifying
                }
            return FileTransferStatus(
                key: file.key, name: file.name, size: file.size, bytes: file.sent, phase: phase,
                pausedByUs: file.pausedByUs, pausedByPeer: file.pausedByPeer)
        }
        let receiving = incomingFiles.values.map { file in
            let phase: FileTransferStatus.Phase =
                switch file.phase {
                case .offered: .offered
                case .receiving: .transferring
                case .interrupted: .interrupted
                case .verifying: .verifying
                }
            return FileTransferStatus(
                key: file.key, name: file.name, size: file.size, bytes: file.received, phase: phase,
                pausedByUs: file.pausedByUs, pausedByPeer: file.pausedByPeer)
        }
        return (sending + receiving).sorted { $0.key.description < $1.key.description }
    }

    var hasFileTraffic: Bool {
        outgoingFiles.values.contains { $0.phase == .sending || $0.phase == .offered }
            || incomingFiles.values.contains { $0.phase == .receiving }
    }

    // MARK: Sending

    private func offerIfConnected(_ key: FileTransferKey) {
        guard var file = outgoingFiles[key], file.phase == .waitingForFriend,
            let state = friends[key.friend], state.connected
        else { return }
        var error = TOX_ERR_FILE_SEND_OK
        let name = Array(file.name.utf8)
        let number = tox_file_send(
            tox, state.number, UInt32(TOX_FILE_KIND_DATA.rawValue), file.size, key.sha256, name, name.count, &error)
        guard error == TOX_ERR_FILE_SEND_OK else {
            // TOO_MANY: toxcore's 256 per friend are taken; try again at the next connection.
            if error == TOX_ERR_FILE_SEND_TOO_MANY { return }
            return finishOutgoing(key, .failed("toxcore refused the file (tox_file_send error \(error.rawValue))"))
        }
        let slot = FileSlot(friend: state.number, file: number)
        file.slot = slot
        file.phase = .offered
        file.requested = []
        outgoingFiles[key] = file
        fileSlots[slot] = key
    }

    /// Sends the chunks toxcore asked for, until its send queue is full.
    func flushFileChunks() {
        guard !killed else { return }
        for key in Array(outgoingFiles.keys) {
            guard var file = outgoingFiles[key], let slot = file.slot, !file.requested.isEmpty else { continue }
            var chunk = [UInt8]()
            while let (position, length) = file.requested.first {
                if chunk.count != length { chunk = [UInt8](repeating: 0, count: length) }
                let count = chunk.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, length, off_t(position)) }
                guard count == length else {
                    outgoingFiles[key] = file
                    control(slot, TOX_FILE_CONTROL_CANCEL)
                    return finishOutgoing(key, .failed("cannot read the file at byte \(position)"))
                }
                var error = TOX_ERR_FILE_SEND_CHUNK_OK
                _ = tox_file_send_chunk(tox, slot.friend, slot.file, position, chunk, length, &error)
                if error == TOX_ERR_FILE_SEND_CHUNK_SENDQ { break }
                guard error == TOX_ERR_FILE_SEND_CHUNK_OK else {
                    // The transfer is gone under us (a disconnect toxcore saw first): the
                    // connection event that follows interrupts it; drop what was asked.
                    file.requested = []
                    break
                }
                file.requested.removeFirst()
                file.sent = max(file.sent, position + UInt64(length))
            }
            outgoingFiles[key] = file
            reportProgress(key)
        }
    }

    private func handleChunkRequest(_ slot: FileSlot, position: UInt64, length: Int) {
        guard let key = fileSlots[slot], var file = outgoingFiles[key] else { return }
        if file.phase == .offered { file.phase = .sending }
        guard length > 0 else {
            // toxcore's "all sent": the transfer is over on its side; wait for the verdict.
            fileSlots[slot] = nil
            file.slot = nil
            file.requested = []
            file.sent = file.size
            file.phase = .awaitingResult
            file.deadline = clock.now + Self.fileVerdictTimeout
            outgoingFiles[key] = file
            return reportProgress(key, force: true)
        }
        file.requested.append((position, length))
        outgoingFiles[key] = file
    }

    private func handleVerdict(sha256: [UInt8], status: Int32, reason: String?, from friend: UserId) {
        let key = FileTransferKey(friend: friend, sha256: sha256, outgoing: true)
        guard let file = outgoingFiles[key] else { return }
        if let slot = file.slot { fileSlots[slot] = nil }
        outgoingFiles[key]?.slot = nil
        switch WirePacket.FileVerdict(rawValue: status) {
        case .completed?:
            // The verdict can overtake toxcore's own "all sent": the last progress is the whole file.
            if file.phase != .awaitingResult { emit(.file(.progress(key, bytes: file.size, total: file.size))) }
            finishOutgoing(key, .completed(path: nil, bytes: file.size))
        case .refused?:
            finishOutgoing(key, .cancelled(byPeer: true, reason: reason))
        default:
            finishOutgoing(key, .failed("the receiver could not take the file: \(reason ?? "status \(status)")"))
        }
    }

    private func finishOutgoing(_ key: FileTransferKey, _ outcome: FileTransferOutcome) {
        guard let file = outgoingFiles.removeValue(forKey: key) else { return }
        if let slot = file.slot { fileSlots[slot] = nil }
        close(file.fd)
        emit(.file(.finished(key, outcome)))
    }

    // MARK: Receiving

    private func handleOffer(_ slot: FileSlot, kind: UInt32, size: UInt64, name: [UInt8], fileId: [UInt8]) {
        guard let friend = friendIds[slot.friend] else { return }
        guard kind == UInt32(TOX_FILE_KIND_DATA.rawValue) else {
            // Avatars and other kinds are not used by this node.
            return control(slot, TOX_FILE_CONTROL_CANCEL)
        }
        let key = FileTransferKey(friend: friend, sha256: fileId, outgoing: false)
        if var file = incomingFiles[key] {
            // Offered again after a cut: carry on where it was.
            if let old = file.slot { fileSlots[old] = nil }
            file.slot = slot
            fileSlots[slot] = key
            incomingFiles[key] = file
            if file.directory != nil { startReceiving(key) }
            return
        }
        guard incomingFiles.count < Self.maxFileTransfers, size <= options.maxIncomingFileSize else {
            let reason =
                size > options.maxIncomingFileSize
                ? "the file is larger than \(options.maxIncomingFileSize) bytes" : "too many transfers at once"
            sendFileVerdict(key, .refused, reason: reason)
            control(slot, TOX_FILE_CONTROL_CANCEL)
            return drop(from: friend, "file offer refused: \(reason)")
        }
        let safe = SafeFileName.make(String(decoding: name, as: UTF8.self))
        incomingFiles[key] = IncomingFile(key: key, name: safe, size: size, slot: slot, offeredAt: clock.now)
        fileSlots[slot] = key
        emit(.file(.offered(FileOffer(key: key, name: safe, size: size))))
    }

    /// Seeks past the bytes on disk and tells the sender to go (RESUME).
    private func startReceiving(_ key: FileTransferKey) {
        guard !killed else { return }
        guard var file = incomingFiles[key], let slot = file.slot else {
            // Accepted while the friend is away: starts when the file is offered again.
            incomingFiles[key]?.phase = .interrupted
            return
        }
        if file.received > 0 {
            var error = TOX_ERR_FILE_SEEK_OK
            if !tox_file_seek(tox, slot.friend, slot.file, file.received, &error) {
                file.received = 0
                _ = file.partial?.empty()
            }
        }
        file.phase = .receiving
        incomingFiles[key] = file
        control(slot, TOX_FILE_CONTROL_RESUME)
        emit(.file(.accepted(key, offset: file.received)))
        noteActivity()
    }

    private func handleChunk(_ slot: FileSlot, position: UInt64, data: [UInt8]) {
        guard let key = fileSlots[slot], var file = incomingFiles[key], let partial = file.partial else { return }
        guard !data.isEmpty else {
            fileSlots[slot] = nil
            file.slot = nil
            file.phase = .verifying
            incomingFiles[key] = file
            reportProgress(key, force: true)
            Task { await self.verifyAndPlace(key) }
            return
        }
        let end = position + UInt64(data.count)
        guard end <= file.size, partial.write(data, at: position) else {
            let reason = end > file.size ? "the sender sent more than the announced size" : "cannot write the file"
            sendFileVerdict(key, .failed, reason: reason)
            control(slot, TOX_FILE_CONTROL_CANCEL)
            return finishIncoming(key, .failed(reason))
        }
        file.received = max(file.received, end)
        incomingFiles[key] = file
        reportProgress(key)
    }

    /// Checks size and SHA-256 off the actor, then stores the file under a free name.
    private func verifyAndPlace(_ key: FileTransferKey) async {
        guard let file = incomingFiles[key], let partial = file.partial, let directory = file.directory else { return }
        let size = partial.size
        let digest = size == file.size ? await FileDigest.sha256Detached(fd: partial.fd, size: size) : nil
        guard incomingFiles[key] != nil else { return }  // cancelled meanwhile
        guard size == file.size else {
            return failVerification(key, "\(size) bytes arrived of \(file.size) announced")
        }
        guard digest == key.sha256 else {
            return failVerification(key, "the file's SHA-256 does not match what the sender announced")
        }
        partial.close()
        incomingFiles[key]?.partial = nil
        do {
            let path = try FilePlacement.place(partial.path, in: directory, as: file.name)
            sendFileVerdict(key, .completed, reason: nil)
            finishIncoming(key, .completed(path: path, bytes: size))
        } catch {
            unlink(partial.path)
            sendFileVerdict(key, .failed, reason: "cannot store the file")
            finishIncoming(key, .failed(error.description))
        }
    }

    private func failVerification(_ key: FileTransferKey, _ reason: String) {
        sendFileVerdict(key, .failed, reason: reason)
        finishIncoming(key, .failed(reason))
    }

    private func finishIncoming(_ key: FileTransferKey, _ outcome: FileTransferOutcome) {
        guard let file = incomingFiles.removeValue(forKey: key) else { return }
        if let slot = file.slot { fileSlots[slot] = nil }
        // Only a finished file is kept; what is cancelled or failed goes.
        file.partial?.remove()
        emit(.file(.finished(key, outcome)))
    }

    private func sendFileVerdict(_ key: FileTransferKey, _ verdict: WirePacket.FileVerdict, reason: String?) {
        guard let number = friends[key.friend]?.number else { return }
        let packet = WirePacket.fileResult(
            sha256: key.sha256, status: verdict.rawValue,
            reason: reason.map { SafeFileName.truncated($0, toBytes: WirePacket.maxReasonLength) })
        do { try enqueue([packet], to: number, friend: key.friend) } catch {
            Self.log.warning("the verdict on \(key) did not go out: \(error)")
        }
        // Out before a CANCEL that may follow, so the sender reads the reason first.
        flushOutgoing()
    }

    // MARK: Both directions

    func handleFileEvent(_ event: ToxEvent) {
        switch event {
        case .fileOffered(let slot, let kind, let size, let name, let fileId):
            handleOffer(slot, kind: kind, size: size, name: name, fileId: fileId)
        case .fileControl(let slot, let control):
            handleControl(slot, control)
        case .fileChunkRequest(let slot, let position, let length):
            handleChunkRequest(slot, position: position, length: length)
        case .fileChunk(let slot, let position, let data):
            handleChunk(slot, position: position, data: data)
        default:
            break
        }
    }

    func handleFilePacket(_ packet: WirePacket, from friend: UserId) {
        if case .fileResult(let sha256, let status, let reason) = packet {
            handleVerdict(sha256: sha256, status: status, reason: reason, from: friend)
        }
    }

    private func handleControl(_ slot: FileSlot, _ control: Tox_File_Control) {
        guard let key = fileSlots[slot] else { return }
        switch control {
        case TOX_FILE_CONTROL_RESUME:
            if key.outgoing, outgoingFiles[key]?.phase == .offered {
                outgoingFiles[key]?.phase = .sending
                emit(.file(.accepted(key, offset: 0)))
            } else {
                setPeerPaused(key, false)
            }
        case TOX_FILE_CONTROL_PAUSE:
            setPeerPaused(key, true)
        case TOX_FILE_CONTROL_CANCEL:
            fileSlots[slot] = nil
            if key.outgoing {
                outgoingFiles[key]?.slot = nil
                // A verdict (with its reason) usually came just before; wait for it a moment.
                if outgoingFiles[key]?.phase != .awaitingResult {
                    finishOutgoing(key, .cancelled(byPeer: true, reason: nil))
                }
            } else {
                incomingFiles[key]?.slot = nil
                finishIncoming(key, .cancelled(byPeer: true, reason: nil))
            }
        default:
            break
        }
    }

    private func setPeerPaused(_ key: FileTransferKey, _ paused: Bool) {
        if key.outgoing {
            guard outgoingFiles[key]?.pausedByPeer != paused else { return }
            outgoingFiles[key]?.pausedByPeer = paused
        } else {
            guard incomingFiles[key]?.pausedByPeer != paused else { return }
            incomingFiles[key]?.pausedByPeer = paused
        }
        emit(.file(paused ? .paused(key, byPeer: true) : .resumed(key, byPeer: true)))
    }

    private func setPaused(_ key: FileTransferKey, _ paused: Bool) throws(CarrierError) {
        let slot = key.outgoing ? outgoingFiles[key]?.slot : incomingFiles[key]?.slot
        guard outgoingFiles[key] != nil || incomingFiles[key] != nil else {
            throw .invalidArgument("no transfer \(key)")
        }
        guard let slot else { throw .friendOffline(key.friend.description) }
        var error = TOX_ERR_FILE_CONTROL_OK
        guard
            tox_file_control(
                tox, slot.friend, slot.file, paused ? TOX_FILE_CONTROL_PAUSE : TOX_FILE_CONTROL_RESUME, &error)
        else {
            if error == TOX_ERR_FILE_CONTROL_ALREADY_PAUSED || error == TOX_ERR_FILE_CONTROL_NOT_PAUSED { return }
            throw .tox(function: "tox_file_control", code: Int(error.rawValue))
        }
        if key.outgoing { outgoingFiles[key]?.pausedByUs = paused } else { incomingFiles[key]?.pausedByUs = paused }
        emit(.file(paused ? .paused(key, byPeer: false) : .resumed(key, byPeer: false)))
        noteActivity()
    }

    /// A friend's link went up or down: offer waiting files, or mark moving ones interrupted.
    func fileLinkChanged(_ friend: UserId, connected: Bool) {
        if connected {
            for key in outgoingFiles.keys where key.friend == friend { offerIfConnected(key) }
            return
        }
        let reason = "the friend went offline"
        for (key, file) in outgoingFiles where key.friend == friend {
            if let slot = file.slot { fileSlots[slot] = nil }
            outgoingFiles[key]?.slot = nil
            outgoingFiles[key]?.requested = []
            switch file.phase {
            case .awaitingResult:
                finishOutgoing(key, .failed("the friend went offline before confirming the file"))
            case .offered, .sending:
                outgoingFiles[key]?.phase = .waitingForFriend
                emit(.file(.interrupted(key, reason: reason)))
            case .waitingForFriend:
                break
            }
        }
        for (key, file) in incomingFiles where key.friend == friend && file.phase != .verifying {
            if let slot = file.slot { fileSlots[slot] = nil }
            incomingFiles[key]?.slot = nil
            if file.phase == .receiving {
                incomingFiles[key]?.phase = .interrupted
                emit(.file(.interrupted(key, reason: reason)))
            }
        }
    }

    /// Fails senders whose receiver never gave a verdict, and refuses offers the
    /// application left unanswered (they would hold one of the 64 places forever).
    func expireFiles(now: ContinuousClock.Instant) {
        for (key, file) in outgoingFiles {
            if let deadline = file.deadline, now > deadline {
                finishOutgoing(key, .failed("no confirmation from the receiver within \(Self.fileVerdictTimeout)"))
            }
        }
        for (key, file) in incomingFiles where file.directory == nil && now - file.offeredAt > options.fileOfferTimeout
        {
            let reason = "not answered within \(options.fileOfferTimeout)"
            sendFileVerdict(key, .refused, reason: reason)
            control(file.slot, TOX_FILE_CONTROL_CANCEL)
            finishIncoming(key, .cancelled(byPeer: false, reason: reason))
        }
    }

    func closeAllFiles(reason: String) {
        for key in Array(outgoingFiles.keys) { finishOutgoing(key, .failed(reason)) }
        for key in Array(incomingFiles.keys) {
            // Keep the partial file: the transfer resumes from it next time.
            incomingFiles[key]?.partial?.close()
            incomingFiles[key]?.partial = nil
            if let file = incomingFiles.removeValue(forKey: key) {
                if let slot = file.slot { fileSlots[slot] = nil }
                emit(.file(.finished(key, .failed(reason))))
            }
        }
    }

    private func reportProgress(_ key: FileTransferKey, force: Bool = false) {
        let now = clock.now
        let (bytes, total, last): (UInt64, UInt64, ContinuousClock.Instant?)
        if key.outgoing {
            guard let file = outgoingFiles[key] else { return }
            (bytes, total, last) = (file.sent, file.size, file.lastProgress)
        } else {
            guard let file = incomingFiles[key] else { return }
            (bytes, total, last) = (file.received, file.size, file.lastProgress)
        }
        if !force, let last, now - last < Self.fileProgressInterval { return }
        if key.outgoing { outgoingFiles[key]?.lastProgress = now } else { incomingFiles[key]?.lastProgress = now }
        emit(.file(.progress(key, bytes: bytes, total: total)))
    }

    private func control(_ slot: FileSlot?, _ control: Tox_File_Control) {
        guard let slot, !killed else { return }
        _ = tox_file_control(tox, slot.friend, slot.file, control, nil)
        if control == TOX_FILE_CONTROL_CANCEL { fileSlots[slot] = nil }
    }

    static func freeBytes(_ directory: String) -> UInt64? {
        var info = statvfs()
        var path = directory
        // The directory may not exist yet: ask about the nearest one that does.
        while statvfs(path, &info) != 0 {
            guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else {
                return statvfs(".", &info) == 0 ? UInt64(info.f_bavail) * UInt64(info.f_frsize) : nil
            }
            path = String(path[..<slash])
        }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }
}
