import FileSafety

/// Files between friends on toxcore's file transfer, as a state machine:
/// toxcore's events, the friend's verdicts, the application's answers and
/// the time go in; what to tell toxcore, the friend and the application
/// comes out (`FileEffect`, in the order to carry them out). It does no I/O:
/// `Carrier+Files.swift` opens and reads files, calls toxcore and hashes,
/// and drives it; tests drive it alone on virtual time.
///
/// Each transfer is keyed by friend, direction and SHA-256 (`FileTransferKey`),
/// which outlives toxcore's file numbers (`FileSlot`), so a transfer cut by a
/// disconnect or a restart resumes when the file is offered again.
struct FriendFileTransfers {
    /// What the driver does for the state machine.
    enum FileEffect {
        /// Tell the application (`CarrierEvent.file`).
        case emit(FileTransferEvent)
        /// `tox_file_control` on a slot.
        case control(FileSlot, FileControl)
        /// Tell the sender how its file ended (`ExtraPacket.fileResult`), before any cancel that follows.
        case verdict(FileTransferKey, ExtraPacket.FileVerdict, reason: String?)
        /// Check the received file's size and SHA-256 off the actor, then call `verified`.
        case verify(FileTransferKey, PartialFile)
        /// Close a sent file's descriptor.
        case closeFile(Int32)
        /// Delete a partial file (cancelled or failed), or only close it (kept for a resume).
        case discard(PartialFile, keep: Bool)
        /// A friend's offer refused: say why in the log.
        case refusedOffer(UserId, reason: String)
        /// The node did something: its loop should look again soon.
        case activity
    }

    /// toxcore's file controls.
    enum FileControl { case resume, pause, cancel }

    /// What toxcore said to an offer (`tox_file_send`).
    enum OfferResult {
        case sent(fileNumber: UInt32)
        /// toxcore's 256 slots for that friend are taken: try at the next connection.
        case tooMany
        case failed(code: UInt32)
    }

    /// The sender waits this long for the receiver's verdict after the last byte.
    let verdictTimeout: Duration
    /// Progress events come at most this often per transfer.
    let progressInterval: Duration
    /// Transfers kept at once, each direction.
    let maxTransfers: Int
    /// Offers larger than this are refused.
    let maxIncomingSize: UInt64
    /// An offer the application leaves unanswered this long is refused.
    let offerTimeout: Duration
    /// Incoming transfers kept at once from one friend (of `maxTransfers`).
    let maxTransfersPerFriend: Int
    /// An accepted file with no chunk for this long ends as stalled; its
    /// partial file stays for a resume (within `PartialFile.sweep`'s bounds).
    let stallTimeout: Duration

    /// No transfers yet; the limits as named.
    init(
        verdictTimeout: Duration, progressInterval: Duration, maxTransfers: Int, maxIncomingSize: UInt64,
        offerTimeout: Duration, maxTransfersPerFriend: Int = 8, stallTimeout: Duration = .seconds(600)
    ) {
        self.verdictTimeout = verdictTimeout
        self.progressInterval = progressInterval
        self.maxTransfers = maxTransfers
        self.maxIncomingSize = maxIncomingSize
        self.offerTimeout = offerTimeout
        self.maxTransfersPerFriend = maxTransfersPerFriend
        self.stallTimeout = stallTimeout
    }

    /// Bytes the accepted incoming files still need on disk, together: a
    /// new file is accepted only if the disk holds its bytes beside these.
    var reservedIncomingBytes: UInt64 {
        incoming.values.filter { $0.directory != nil }.reduce(0) { $0 + $1.outstanding }
    }

    private(set) var outgoing: [FileTransferKey: OutgoingFile] = [:]
    /// Set only by the state machine (here and in its `+Receiving` extension).
    var incoming: [FileTransferKey: IncomingFile] = [:]
    /// toxcore's file numbers of the transfers that have one now.
    var slots: [FileSlot: FileTransferKey] = [:]

    /// Whether bytes are moving or about to: the node's loop then runs faster.
    var hasTraffic: Bool {
        outgoing.values.contains { $0.phase == .sending || $0.phase == .offered }
            || incoming.values.contains { $0.phase == .receiving }
    }

    /// toxcore started afresh: its file numbers mean nothing now.
    mutating func forgetSlots() {
        slots = [:]
    }

    // MARK: Sending

    /// A hashed, open file to send; nil, or why it cannot be taken.
    mutating func add(_ file: OutgoingFile) -> String? {
        guard outgoing.count < maxTransfers else { return "\(maxTransfers) files are being sent already" }
        guard outgoing[file.key] == nil else { return "this file is already being sent to \(file.key.friend)" }
        outgoing[file.key] = file
        return nil
    }

    /// Offers a waiting file through `send` (toxcore) if the friend is connected.
    mutating func offer(
        _ key: FileTransferKey, friendNumber: UInt32?, send: (OutgoingFile) -> OfferResult
    ) -> [FileEffect] {
        guard var file = outgoing[key], file.phase == .waitingForFriend, let friendNumber else { return [] }
        switch send(file) {
        case .tooMany:
            return []
        case .failed(let code):
            return finishOutgoing(key, .failed("toxcore refused the file (tox_file_send error \(code))"))
        case .sent(let number):
            let slot = FileSlot(friend: friendNumber, file: number)
            file.slot = slot
            file.phase = .offered
            file.requested = []
            outgoing[key] = file
            slots[slot] = key
            return []
        }
    }

    /// The keys of files with chunks toxcore asked for.
    var filesWithRequests: [FileTransferKey] { outgoing.compactMap { $1.requested.isEmpty ? nil : $0 } }

    /// The next chunk asked for on `key`: where it goes and what to read.
    func nextRequest(_ key: FileTransferKey) -> (slot: FileSlot, reader: ReadAhead, position: UInt64, length: Int)? {
        guard let file = outgoing[key], let slot = file.slot, let request = file.requested.first else { return nil }
        return (slot, file.reader, request.position, request.length)
    }

    /// The chunk `nextRequest` gave went to toxcore.
    mutating func chunkSent(_ key: FileTransferKey) {
        guard let request = outgoing[key]?.requested.first, let sent = outgoing[key]?.sent else { return }
        // In place: a copy of the file's entry would copy its queue of requests, for every chunk.
        outgoing[key]?.requested.removeFirst()
        outgoing[key]?.sent = max(sent, request.position + UInt64(request.length))
    }

    /// toxcore no longer knows the transfer (a disconnect it saw first): the
    /// connection event that follows interrupts it; what was asked is dropped.
    mutating func requestsGone(_ key: FileTransferKey) {
        outgoing[key]?.requested = []
    }

    /// The file could not be read at `position`: the transfer fails.
    mutating func readFailed(_ key: FileTransferKey, at position: UInt64) -> [FileEffect] {
        guard let slot = outgoing[key]?.slot else { return [] }
        return cancel(slot) + finishOutgoing(key, .failed("cannot read the file at byte \(position)"))
    }

    /// The files whose next chunk may be read and sent inside toxcore's
    /// chunk request callback (`ToxEventBuffer.chunkSources`): offered or
    /// sending, not paused, and with no earlier requests waiting (chunks must
    /// go in order). Sending there lets toxcore's `max_speed_reached` see each
    /// chunk before it asks for the next, as raw toxcore clients do; asked
    /// for in bulk and sent after `tox_iterate`, chunks overrun its congestion
    /// window and the transfer runs at a fraction of the link.
    var directChunkSources: [FileSlot: ReadAhead] {
        var sources: [FileSlot: ReadAhead] = [:]
        for file in outgoing.values
        where (file.phase == .offered || file.phase == .sending) && file.requested.isEmpty
            && !file.pausedByUs && !file.pausedByPeer
        {
            if let slot = file.slot { sources[slot] = file.reader }
        }
        return sources
    }

    /// A chunk toxcore asked for went out from inside its callback (see `directChunkSources`).
    mutating func chunkSentDirectly(_ slot: FileSlot, position: UInt64, length: Int, now: ContinuousClock.Instant)
        -> [FileEffect]
    {
        guard let key = slots[slot], let file = outgoing[key], file.requested.isEmpty else { return [] }
        if file.phase == .offered { outgoing[key]?.phase = .sending }
        outgoing[key]?.sent = max(file.sent, position + UInt64(length))
        return progress(key, now: now)
    }

    /// toxcore asks for a chunk (length 0: everything was sent).
    mutating func chunkRequested(_ slot: FileSlot, position: UInt64, length: Int, now: ContinuousClock.Instant)
        -> [FileEffect]
    {
        guard let key = slots[slot], var file = outgoing[key] else { return [] }
        if file.phase == .offered { file.phase = .sending }
        guard length > 0 else {
            // toxcore's "all sent": the transfer is over on its side; wait for the verdict.
            slots[slot] = nil
            file.slot = nil
            file.requested = []
            file.sent = file.size
            file.phase = .awaitingResult
            file.deadline = now + verdictTimeout
            outgoing[key] = file
            return progress(key, now: now, force: true)
        }
        file.requested.append((position, length))
        outgoing[key] = file
        return []
    }

    /// The receiver's verdict on a file we sent.
    mutating func verdict(_ key: FileTransferKey, status: Int32, reason: String?) -> [FileEffect] {
        guard let file = outgoing[key] else { return [] }
        if let slot = file.slot { slots[slot] = nil }
        outgoing[key]?.slot = nil
        switch ExtraPacket.FileVerdict(rawValue: status) {
        case .completed?:
            // The verdict can overtake toxcore's own "all sent": the last progress is the whole file.
            let last: [FileEffect] =
                file.phase == .awaitingResult ? [] : [.emit(.progress(key, bytes: file.size, total: file.size))]
            return last + finishOutgoing(key, .completed(path: nil, bytes: file.size))
        case .refused?:
            return finishOutgoing(key, .cancelled(byPeer: true, reason: reason))
        default:
            return finishOutgoing(key, .failed("the receiver could not take the file: \(reason ?? "status \(status)")"))
        }
    }

    private mutating func finishOutgoing(_ key: FileTransferKey, _ outcome: FileTransferOutcome) -> [FileEffect] {
        guard let file = outgoing.removeValue(forKey: key) else { return [] }
        if let slot = file.slot { slots[slot] = nil }
        return [.closeFile(file.fd), .emit(.finished(key, outcome))]
    }

    // MARK: Both directions

    /// Cancels a transfer in either direction (a partial download is deleted); nil if there is none.
    mutating func cancel(_ key: FileTransferKey) -> [FileEffect]? {
        if let file = outgoing[key] {
            return cancel(file.slot) + finishOutgoing(key, .cancelled(byPeer: false, reason: nil))
        }
        if let file = incoming[key] {
            return cancel(file.slot) + finishIncoming(key, .cancelled(byPeer: false, reason: nil))
        }
        return nil
    }

    /// Ends a moving transfer on toxcore so a direct session carries it on
    /// (`Carrier.handOverFile`): toxcore's slot is cancelled, and nothing is
    /// emitted, since the transfer goes on. A receiver keeps its partial file
    /// for the session to resume from, and hands it over only while it takes
    /// bytes (accepted, not verifying, not paused by itself); a sender stops
    /// reading its file whatever its phase, even when all of it went out (the
    /// receiver had not taken all of it, or it would not have handed over).
    /// Nil for a transfer that cannot be handed over now.
    mutating func handOver(_ key: FileTransferKey) -> (FileHandOver, [FileEffect])? {
        if key.outgoing {
            // In any phase: a link that dropped meanwhile left it waiting for the friend, and kept
            // there it was offered again when the link came back, after the session had taken it.
            guard let file = outgoing[key] else { return nil }
            outgoing[key] = nil
            return (FileHandOver(bytes: file.sent, directory: nil), cancel(file.slot) + [.closeFile(file.fd)])
        }
        guard let file = incoming[key], file.phase == .receiving, !file.pausedByUs, let directory = file.directory,
            let partial = file.partial
        else { return nil }
        incoming[key] = nil
        return (
            FileHandOver(bytes: file.received, directory: directory),
            cancel(file.slot) + [.discard(partial, keep: true)]
        )
    }

    /// A sender's session offers to carry on `key`: a cancel from the friend is
    /// held until `endHandOver` (false: no such transfer moving).
    mutating func beginHandOver(_ key: FileTransferKey) -> Bool {
        guard key.outgoing, let file = outgoing[key], file.phase == .offered || file.phase == .sending else {
            return false
        }
        outgoing[key]?.handOver = .offered
        return true
    }

    /// The session did not carry `key` on: toxcore goes on with it, or, if
    /// the friend cancelled toxcore's transfer meanwhile, it ends that way now.
    mutating func endHandOver(_ key: FileTransferKey) -> [FileEffect] {
        guard let handOver = outgoing[key]?.handOver else { return [] }
        outgoing[key]?.handOver = nil
        guard handOver == .cancelledByFriend else { return [] }
        return finishOutgoing(key, .cancelled(byPeer: true, reason: nil))
    }

    /// Whether `key` is a transfer under way (either direction).
    func contains(_ key: FileTransferKey) -> Bool { outgoing[key] != nil || incoming[key] != nil }

    /// toxcore's slot for a transfer, while the friend is connected.
    func slot(of key: FileTransferKey) -> FileSlot? { key.outgoing ? outgoing[key]?.slot : incoming[key]?.slot }

    /// This side paused or resumed a transfer (toxcore took the control).
    mutating func pausedByUs(_ key: FileTransferKey, _ paused: Bool) -> [FileEffect] {
        if key.outgoing { outgoing[key]?.pausedByUs = paused } else { incoming[key]?.pausedByUs = paused }
        return [.emit(paused ? .paused(key, byPeer: false) : .resumed(key, byPeer: false)), .activity]
    }

    /// The friend's control on a slot (`file_recv_control`).
    mutating func control(_ slot: FileSlot, _ control: FileControl) -> [FileEffect] {
        guard let key = slots[slot] else { return [] }
        switch control {
        case .resume:
            if key.outgoing, outgoing[key]?.phase == .offered {
                outgoing[key]?.phase = .sending
                return [.emit(.accepted(key, offset: 0))]
            }
            return pausedByPeer(key, false)
        case .pause:
            return pausedByPeer(key, true)
        case .cancel:
            slots[slot] = nil
            if key.outgoing {
                outgoing[key]?.slot = nil
                if outgoing[key]?.handOver != nil {
                    outgoing[key]?.requested = []
                    outgoing[key]?.handOver = .cancelledByFriend
                    return []
                }
                // A verdict (with its reason) usually came just before; wait for it a moment.
                guard outgoing[key]?.phase != .awaitingResult else { return [] }
                return finishOutgoing(key, .cancelled(byPeer: true, reason: nil))
            }
            incoming[key]?.slot = nil
            return finishIncoming(key, .cancelled(byPeer: true, reason: nil))
        }
    }

    private mutating func pausedByPeer(_ key: FileTransferKey, _ paused: Bool) -> [FileEffect] {
        if key.outgoing {
            guard let file = outgoing[key], file.pausedByPeer != paused else { return [] }
            outgoing[key]?.pausedByPeer = paused
        } else {
            guard let file = incoming[key], file.pausedByPeer != paused else { return [] }
            incoming[key]?.pausedByPeer = paused
        }
        return [.emit(paused ? .paused(key, byPeer: true) : .resumed(key, byPeer: true))]
    }

    /// A friend's link went down: moving transfers are interrupted (and resume when it is back).
    mutating func linkDown(_ friend: UserId) -> [FileEffect] {
        let reason = "the friend went offline"
        var effects: [FileEffect] = []
        for (key, file) in outgoing where key.friend == friend {
            if let slot = file.slot { slots[slot] = nil }
            outgoing[key]?.slot = nil
            outgoing[key]?.requested = []
            switch file.phase {
            case .awaitingResult:
                effects += finishOutgoing(key, .failed("the friend went offline before confirming the file"))
            case .offered, .sending:
                outgoing[key]?.phase = .waitingForFriend
                effects.append(.emit(.interrupted(key, reason: reason)))
            case .waitingForFriend:
                break
            }
        }
        for (key, file) in incoming where key.friend == friend && file.phase != .verifying {
            if let slot = file.slot { slots[slot] = nil }
            incoming[key]?.slot = nil
            if file.phase == .receiving {
                incoming[key]?.phase = .interrupted
                effects.append(.emit(.interrupted(key, reason: reason)))
            }
        }
        return effects
    }

    /// The files waiting for `friend` to connect, to offer now.
    func waiting(for friend: UserId) -> [FileTransferKey] {
        outgoing.compactMap { key, file in key.friend == friend && file.phase == .waitingForFriend ? key : nil }
    }

    /// Fails senders whose receiver never gave a verdict, and refuses offers the
    /// application left unanswered (they would hold one of the places forever).
    mutating func expire(now: ContinuousClock.Instant) -> [FileEffect] {
        var effects: [FileEffect] = []
        for (key, file) in outgoing {
            if let deadline = file.deadline, now > deadline {
                effects += finishOutgoing(key, .failed("no confirmation from the receiver within \(verdictTimeout)"))
            }
        }
        for (key, file) in incoming where file.directory == nil && now - file.offeredAt > offerTimeout {
            let reason = "not answered within \(offerTimeout)"
            effects +=
                [.verdict(key, .refused, reason: reason)] + cancel(file.slot)
                + finishIncoming(key, .cancelled(byPeer: false, reason: reason))
        }
        // Accepted files that stopped moving (the friend went away mid-file, or
        // keeps the transfer open and sends nothing) give their place back.
        for (key, file) in incoming
        where file.directory != nil && file.phase != .verifying && !file.pausedByUs
            && now - file.lastActivity > stallTimeout
        {
            let reason = "stalled: nothing arrived for \(stallTimeout)"
            if let slot = file.slot { slots[slot] = nil }
            incoming[key] = nil
            effects +=
                [.verdict(key, .failed, reason: reason)] + cancel(file.slot)
                + (file.partial.map { [.discard($0, keep: true)] } ?? []) + [.emit(.finished(key, .failed(reason)))]
        }
        return effects
    }

    /// The node stops: every transfer fails; partial files stay for a resume next time.
    mutating func closeAll(reason: String) -> [FileEffect] {
        var effects: [FileEffect] = []
        for key in Array(outgoing.keys) { effects += finishOutgoing(key, .failed(reason)) }
        for (key, file) in incoming {
            if let slot = file.slot { slots[slot] = nil }
            effects +=
                (file.partial.map { [.discard($0, keep: true)] } ?? []) + [.emit(.finished(key, .failed(reason)))]
        }
        incoming = [:]
        return effects
    }

    /// Bytes so far, at most every `progressInterval` unless `force`d.
    mutating func progress(_ key: FileTransferKey, now: ContinuousClock.Instant, force: Bool = false) -> [FileEffect] {
        let entry: (bytes: UInt64, total: UInt64, last: ContinuousClock.Instant?)? =
            key.outgoing
            ? outgoing[key].map { ($0.sent, $0.size, $0.lastProgress) }
            : incoming[key].map { ($0.received, $0.size, $0.lastProgress) }
        guard let entry else { return [] }
        if !force, let last = entry.last, now - last < progressInterval { return [] }
        if key.outgoing { outgoing[key]?.lastProgress = now } else { incoming[key]?.lastProgress = now }
        return [.emit(.progress(key, bytes: entry.bytes, total: entry.total))]
    }

    /// A cancel to toxcore on `slot` (if the transfer has one now), forgetting the slot.
    mutating func cancel(_ slot: FileSlot?) -> [FileEffect] {
        guard let slot else { return [] }
        slots[slot] = nil
        return [.control(slot, .cancel)]
    }

    /// Every transfer not yet finished, as it stands.
    var statuses: [FileTransferStatus] {
        let sending = outgoing.values.map { file in
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
        let receiving = incoming.values.map { file in
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
}
