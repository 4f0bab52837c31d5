import CarrierWire

extension Carrier {
    struct InviteKey: Hashable {
        var peer: UserId
        var transferId: UInt64
    }

    struct PendingInvite {
        var deliver: @Sendable (InviteReply) -> Void
        var deadline: ContinuousClock.Instant
        /// The request as sent, to send again until a reply comes (to a friend that takes repeats).
        var packets: [CarrierPacket]
        var nextSend: ContinuousClock.Instant
        var interval: Duration
    }

    /// A reply we sent, kept to send again if the request comes again (its
    /// reply was lost); the app sees each invite once.
    struct RepliedInvite {
        var packets: [CarrierPacket]
        var expires: ContinuousClock.Instant
    }

    /// An invite not answered within this is sent again (then at doubling
    /// intervals up to `maxInviteResendInterval`), and at once when the
    /// friend comes back online. toxcore delivers lossless packets on a live
    /// connection, but a connection that dies under them (a NAT that forgot
    /// its mappings, a friend whose network dropped) loses them with it, and
    /// toxcore may call it live for seconds after: the invite layer is what
    /// knows an answer is missing. The receiver drops repeats (`repliedInvites`).
    /// Only to a friend that said it takes repeats (`ExtraPacket.Features`):
    /// a Carrier peer would take each as a new invite.
    static let inviteResendInterval: Duration = .seconds(4)
    static let maxInviteResendInterval: Duration = .seconds(16)
    /// Replies kept for repeats, at most.
    static let maxRepliedInvites = 512

    /// Sends an invite (1 byte to 8 KB) to `userId` or `userId:extension` and
    /// waits for the reply, or for `options.inviteTimeout` (then the reply is
    /// `InviteReply.timeout`, as in Carrier).
    public func sendInvite(_ data: [UInt8], to target: String, timeout: Duration? = nil) async throws(CarrierError)
        -> InviteReply
    {
        let (stream, continuation) = AsyncStream<InviteReply>.makeStream()
        try postInvite(data, to: target, timeout: timeout) { reply in
            continuation.yield(reply)
            continuation.finish()
        }
        for await reply in stream { return reply }
        return InviteReply(status: -1, reason: "the node stopped")
    }

    /// Sends an invite without waiting: it is queued when this returns (invites
    /// to one friend leave in the order of these calls), and `onReply` runs once,
    /// on this actor, with the reply, the timeout, or the reason it failed.
    public func postInvite(
        _ data: [UInt8], to target: String, timeout: Duration? = nil,
        onReply: @escaping @Sendable (InviteReply) -> Void
    ) throws(CarrierError) {
        let (friend, ext) = try parseTarget(target)
        let number = try friendNumber(friend)
        guard !data.isEmpty, data.count <= Self.maxInviteSize else {
            throw .tooLong("invite data is 1 to \(Self.maxInviteSize) bytes, this is \(data.count)")
        }
        try ensureAlive()
        guard friends[friend]?.connected == true else { throw .friendOffline(friend.description) }
        let tid = Self.newTransferId()
        let packets: [CarrierPacket]
        do { packets = try CarrierFragmenter.invite(data, ext: ext, bundle: nil, tid: tid) } catch {
            throw .invalidArgument(error.description)
        }
        let transferId = UInt64(bitPattern: tid)
        try enqueue(packets, to: number, friend: friend)
        let deadline = clock.now + (timeout ?? options.inviteTimeout)
        pendingInvites[InviteKey(peer: friend, transferId: transferId)] = PendingInvite(
            deliver: onReply, deadline: deadline, packets: packets, nextSend: clock.now + Self.inviteResendInterval,
            interval: Self.inviteResendInterval)
    }

    /// Tests: the next invite or invite reply that arrives carrying `data`
    /// is dropped whole, as a connection that dies under it would.
    func loseNextInvite(carrying data: [UInt8]) { lostInvitesForTests.insert(data) }

    /// Sends again the invites that wait for a reply from `friend` (all of
    /// them, or only those due), if the friend is online.
    func resendInvites(to friend: UserId? = nil, now: ContinuousClock.Instant, onlyDue: Bool) {
        for (key, pending) in pendingInvites where friend == nil || key.peer == friend {
            guard !onlyDue || now >= pending.nextSend, friends[key.peer]?.connected == true,
                friends[key.peer]?.extras.contains(.inviteResend) == true, let number = try? friendNumber(key.peer)
            else { continue }
            do {
                try enqueue(pending.packets, to: number, friend: key.peer)
                counters.invitesResent += 1
            } catch {
                Self.log.info("invite to \(key.peer) not sent again: \(error)")
            }
            let interval = min(pending.interval * 2, Self.maxInviteResendInterval)
            pendingInvites[key]?.nextSend = now + interval
            pendingInvites[key]?.interval = interval
        }
    }

    /// Answers an invite. Status 0 carries `data` (up to 8 KB); any other
    /// status carries `reason` (up to 255 bytes) instead. Each invite takes one reply.
    public func replyInvite(_ invite: IncomingInvite, status: Int32, reason: String? = nil, data: [UInt8] = [])
        throws(CarrierError)
    {
        try ensureAlive()
        let key = InviteKey(peer: invite.from, transferId: invite.id)
        guard incomingInvites[key] != nil else { throw .noSuchInvite }
        let number = try friendNumber(invite.from)
        guard data.count <= Self.maxInviteSize else { throw .tooLong("a reply is at most \(Self.maxInviteSize) bytes") }
        guard status != 0 || !data.isEmpty else {
            throw .invalidArgument("a reply that accepts carries 1 to \(Self.maxInviteSize) bytes (Carrier's rule)")
        }
        guard (reason?.utf8.count ?? 0) <= CarrierLimits.maxReason else {
            throw .tooLong("a reason is at most \(CarrierLimits.maxReason) bytes")
        }
        let packets: [CarrierPacket]
        do {
            packets = try CarrierFragmenter.reply(
                status: status, reason: reason, data: data, ext: invite.extensionName, bundle: nil,
                tid: Int64(bitPattern: invite.id))
        } catch { throw .invalidArgument(error.description) }
        try enqueue(packets, to: number, friend: invite.from)
        incomingInvites[key] = nil
        if repliedInvites.count >= Self.maxRepliedInvites,
            let oldest = repliedInvites.min(by: { $0.value.expires < $1.value.expires })?.key
        {
            repliedInvites[oldest] = nil
        }
        repliedInvites[key] = RepliedInvite(packets: packets, expires: clock.now + options.inviteTimeout)
    }

    func enqueue(_ packets: [CarrierPacket], to number: UInt32, friend: UserId) throws(CarrierError) {
        try enqueue(packets.map { OutgoingQueue.Packet($0) }, to: number, friend: friend)
    }

    /// Queues one of our extras, ahead of message pieces as invites are.
    func enqueue(extra packet: ExtraPacket, to number: UInt32, friend: UserId) throws(CarrierError) {
        try enqueue([OutgoingQueue.Packet(packet)], to: number, friend: friend)
    }

    private func enqueue(_ encoded: [OutgoingQueue.Packet], to number: UInt32, friend: UserId) throws(CarrierError) {
        var queue = outgoing[number] ?? OutgoingQueue()
        guard queue.hasRoom(for: encoded.reduce(0) { $0 + $1.bytes.count }) else {
            throw .queueFull(friend.description)
        }
        for packet in encoded { queue.append(packet, urgent: true) }
        outgoing[number] = queue
        flushOutgoing()
        noteActivity()
    }

    /// A piece of an invite; the whole goes to the app once, to its extension's stream.
    func handleInviteFragment(_ fragment: CarrierPacket.Fragment, from friend: UserId) {
        switch reassembler.take(fragment, kind: .invite, from: friend, now: clock.now) {
        case .pending: return
        case .dropped(let why):
            counters.rejectedFragments += 1
            drop(from: friend, "invite fragment dropped: \(why)")
        case .whole(let whole):
            let key = InviteKey(peer: friend, transferId: UInt64(bitPattern: whole.tid))
            if lostInvitesForTests.remove(whole.data) != nil { return }
            // The sender did not hear our reply (or not yet): the app has this invite already.
            if incomingInvites[key] != nil {
                counters.repeatedInvites += 1
                return
            }
            if let replied = repliedInvites[key], let number = try? friendNumber(friend) {
                counters.repeatedInvites += 1
                try? enqueue(replied.packets, to: number, friend: friend)  // a full queue: the sender asks again
                return
            }
            let invite = IncomingInvite(
                from: friend, extensionName: whole.ext, id: key.transferId, data: whole.data, bundle: whole.bundle)
            incomingInvites[key] = clock.now + options.inviteTimeout
            guard let ext = whole.ext else { return emit(.inviteRequest(invite)) }
            guard let extensionHub = extensionHubs[ext] else {
                counters.unknownExtension += 1
                drop(from: friend, "invite for unregistered extension \(ext)")
                // Answer at once so the sender does not wait out its timeout.
                try? replyInvite(invite, status: InviteReply.unknownExtensionStatus, reason: "no extension \(ext)")
                return
            }
            extensionHub.send(.inviteRequest(invite))
        }
    }

    /// A piece of a reply: a refusal is one packet, an acceptance may come in pieces.
    func handleInviteResponse(_ fragment: CarrierPacket.Fragment, status: Int32, reason: String?, from friend: UserId) {
        let key = InviteKey(peer: friend, transferId: UInt64(bitPattern: fragment.tid))
        guard pendingInvites[key] != nil else {
            counters.malformedPackets += 1
            return drop(from: friend, "reply to an unknown or expired invite")
        }
        if status != 0 { return resolveInvite(key, InviteReply(status: status, reason: reason)) }
        switch reassembler.take(fragment, kind: .reply, from: friend, now: clock.now) {
        case .pending: return
        case .dropped(let why):
            counters.rejectedFragments += 1
            drop(from: friend, "invite reply fragment dropped: \(why)")
        case .whole(let whole):
            if lostInvitesForTests.remove(whole.data) != nil { return }
            resolveInvite(key, InviteReply(status: 0, data: whole.data, bundle: whole.bundle))
        }
    }

    func resolveInvite(_ key: InviteKey, _ reply: InviteReply) {
        pendingInvites.removeValue(forKey: key)?.deliver(reply)
    }

    /// Registers an extension: invites and messages addressed to
    /// `userId:name` arrive on the returned stream instead of `events()`.
    /// Registering again replaces the previous stream.
    public func registerExtension(_ name: String) throws(CarrierError) -> AsyncStream<CarrierEvent> {
        try Self.checkExtensionName(name)
        if var previous = extensionHubs.removeValue(forKey: name) { previous.finish() }
        var extensionHub = EventHub<CarrierEvent>()
        let stream = extensionHub.subscribe { _ in }
        extensionHubs[name] = extensionHub
        return stream
    }

    /// Stops taking invites for an extension: its stream ends, and its invites get the unknown-extension status.
    public func unregisterExtension(_ name: String) {
        if var extensionHub = extensionHubs.removeValue(forKey: name) { extensionHub.finish() }
    }
}
