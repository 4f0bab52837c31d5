import CarrierWire

/// Turns what toxcore reported into node state and `CarrierEvent`s.
extension Carrier {
    func handle(_ event: ToxEvent) {
        switch event {
        case .selfConnection(let isConnected):
            toxConnected = isConnected
            isolation.toxConnection(connected: isConnected, now: clock.now)
            updateConnection()
        case .friendRequest(let key, let payload):
            handleFriendRequest(key: key, payload: payload)
        case .friendPacket(let number, let data):
            guard let friend = friendIds[number] else { return }
            lastActivity = clock.now
            handleExtraPacket(data, from: friend)
        case .friendMessage(let number, let data):
            guard let friend = friendIds[number] else { return }
            lastActivity = clock.now
            acknowledgementsDue.insert(number)
            handleCarrierPacket(data, from: friend)
        case .friendReadReceipt(let number, let toxMessageId):
            handleReadReceipt(friend: number, toxMessageId: toxMessageId)
        case .friendConnection(let number, let link):
            handleFriendConnection(number: number, link: link)
        case .friendStatus(let number, let presence):
            guard let friend = friendIds[number] else { return }
            friends[friend]?.presence = presence
            emit(.friendPresence(friend, presence))
        case .friendStatusMessage(let number, let bytes):
            guard let friend = friendIds[number] else { return }
            // toxcore sends the status message on every connection: empty from a
            // node that never set its user info, which is no info, not a bad packet.
            guard !bytes.isEmpty else {
                friends[friend]?.info = UserInfo()
                return
            }
            guard let info = UserInfo(statusMessage: bytes) else {
                counters.malformedPackets += 1
                return drop(from: friend, "friend info that does not decode")
            }
            friends[friend]?.info = info
            emit(.friendInfo(friend, info))
        case .conferenceInvite(let number, let cookie):
            guard let friend = friendIds[number] else { return }
            emit(.groupInvite(from: friend, cookie: cookie))
        case .conferenceConnected(let number):
            if let group = try? groupId(number: number) { emit(.groupConnected(group)) }
        case .conferenceMessage(let number, let key, let data):
            // toxcore echoes our own messages back: do not report them as received.
            guard let key, key != userId.publicKey, let from = UserId(publicKey: key),
                let group = try? groupId(number: number)
            else { return }
            emit(.groupMessage(group, from: from, data: data))
        case .conferenceTitle(let number, let title):
            if let group = try? groupId(number: number) {
                emit(.groupTitle(group, title: String(decoding: title, as: UTF8.self)))
            }
        case .conferencePeerListChanged(let number):
            if let group = try? groupId(number: number) { emit(.groupPeersChanged(group)) }
        case .fileOffered, .fileControl, .fileChunkRequest, .fileChunkSent, .fileChunk, .fileChunksWritten:
            handleFileEvent(event)
        }
    }

    private func handleFriendRequest(key: [UInt8], payload: [UInt8]) {
        guard let from = UserId(publicKey: key), friends[from] == nil else { return }
        guard payload.count <= CarrierLimits.maxFriendRequestPayload,
            case .friendRequest(let request)? = try? CarrierPacket.decode(payload)
        else {
            // Anything else in a request (an invite, a message, garbage) comes
            // from a non-friend and is refused.
            counters.malformedPackets += 1
            return drop(from: from, "friend request that is not a friend request packet")
        }
        emit(
            .friendRequest(
                from: from, name: request.name, description: request.description,
                hello: Self.withoutTrailingNuls(request.hello ?? "")))
    }

    /// toxcore reports UDP/TCP switches too; only up/down changes are events.
    private func handleFriendConnection(number: UInt32, link: FriendLink?) {
        guard let friend = friendIds[number] else { return }
        let wasConnected = friends[friend]?.connected ?? false
        friends[friend]?.link = link
        let isConnected = link != nil
        guard isConnected != wasConnected else { return }
        newLinkChanged(friend, up: isConnected)
        friendLinksChanged()
        // Only where every address is 127.0.0.1: see FriendLinkRefresh.
        if options.loopbackOnly {
            linkRefresh.friendConnection(friend, up: isConnected, online: connected, now: clock.now)
        }
        fileLinkChanged(friend, connected: isConnected)
        friends[friend]?.linkUpAt = isConnected ? clock.now : nil
        // A friend back online may have left messages on Express while we were away.
        if isConnected {
            // What we take beyond Carrier; a Carrier peer's toxcore drops it.
            try? enqueue(extra: .hello(features: .ours), to: number, friend: friend)
            requestPull()
            // What it did not answer may have died with the old connection.
            resendInvites(to: friend, now: clock.now, onlyDue: false)
        }
        if !isConnected {
            forgetFriendTraffic(number: number, id: friend, reason: "the friend went offline")
        } else if awaitingAcceptance.remove(friend) != nil {
            dirty = true
            if let info = friendInfo(friend) { emit(.friendAdded(info)) }
        }
        emit(.friendConnection(friend, connected: isConnected))
    }

    /// Tells `OfflineRecovery` whether any friend's link is up, after a link
    /// went up or down or a friend left toxcore.
    func friendLinksChanged() {
        recovery.friendLinks(anyUp: friends.values.contains { $0.connected }, now: clock.now)
    }

    /// A friend message: one Carrier packet.
    private func handleCarrierPacket(_ data: [UInt8], from friend: UserId) {
        let packet: CarrierPacket
        do { packet = try CarrierPacket.decode(data) } catch {
            counters.malformedPackets += 1
            return drop(from: friend, "\(error)")
        }
        switch packet {
        case .message(let ext, let body):
            guard !body.isEmpty, body.count <= CarrierLimits.maxMessage else {
                counters.malformedPackets += 1
                return drop(from: friend, "a message of \(body.count) bytes: 1 to \(CarrierLimits.maxMessage)")
            }
            _ = deliverMessage(from: friend, ext: ext, data: body)
        case .bulk(let fragment):
            switch reassembler.take(fragment, kind: .bulk, from: friend, now: clock.now) {
            case .pending: break
            case .whole(let whole): _ = deliverMessage(from: friend, ext: whole.ext, data: whole.data)
            case .dropped(let why):
                counters.rejectedFragments += 1
                drop(from: friend, "bulk message fragment dropped: \(why)")
            }
        case .inviteRequest(let fragment):
            handleInviteFragment(fragment, from: friend)
        case .inviteResponse(let fragment, let status, let reason):
            handleInviteResponse(fragment, status: status, reason: reason, from: friend)
        case .userInfo, .friendRequest:
            counters.malformedPackets += 1
            drop(from: friend, "packet type not valid in a message")
        }
    }

    /// A lossless custom packet: one of our extras (`ExtraPacket`).
    private func handleExtraPacket(_ data: [UInt8], from friend: UserId) {
        let packet: ExtraPacket
        do { packet = try ExtraPacket.decode(data) } catch {
            counters.malformedPackets += 1
            return drop(from: friend, "malformed packet: \(error)")
        }
        switch packet {
        case .hello(let features):
            friends[friend]?.extras = features
        case .fileResult:
            handleFilePacket(packet, from: friend)
        case .dhtNode(let key, let port):
            handleDhtHint(key: key, port: port, from: friend)
        }
    }

    /// Carrier's Swift and Java bindings send strings with their C NUL
    /// (wire notes §3.3); what a peer meant ends before it.
    static func withoutTrailingNuls(_ text: String) -> String {
        var text = Substring(text)
        while text.last == "\0" { text = text.dropLast() }
        return String(text)
    }

    /// Drops what timed out: incomplete transfers, unanswered invites, missing receipts.
    func expire(now: ContinuousClock.Instant) {
        let expired = reassembler.expire(now: now)
        if expired > 0 {
            counters.expiredTransfers += expired
            Self.log.info("\(expired) incomplete transfer(s) expired")
        }
        for (key, pending) in pendingInvites where now > pending.deadline {
            resolveInvite(key, .timeout)
        }
        for (key, deadline) in incomingInvites where now > deadline {
            incomingInvites[key] = nil
        }
        for (key, replied) in repliedInvites where now > replied.expires {
            repliedInvites[key] = nil
        }
        resendInvites(now: now, onlyDue: true)
        fallBackToExpress(now: now)
        expireReceipts(now: now)
        expireFiles(now: now)
        startFilesOnSettledLinks(now: now)
    }

    func failEverythingPending(reason: String) {
        for key in Array(pendingInvites.keys) { resolveInvite(key, InviteReply(status: -1, reason: reason)) }
        for id in Array(receipts.keys) { finishReceipt(id, .error(reason)) }
        outgoing = [:]
    }

    /// Sets `connected` from what toxcore says and what the socket heard
    /// (`IsolationCheck`): the node's own view of whether it is on the network.
    func updateConnection() {
        let now = clock.now
        let heardOverUdp = socketWatch?.lastHeardFromOthers
        if let heardOverUdp { isolation.heard(at: heardOverUdp) }
        // UDP silent for a while (blocked, or only ourselves): look at the TCP relays, at most once a second.
        if toxConnected, now - (heardOverUdp ?? isolationTcpCheck) > .seconds(5),
            now - isolationTcpCheck >= .seconds(1)
        {
            isolationTcpCheck = now
            let relayPorts = Set(options.bootstrapNodes.map(\.port))
            if let heard = SocketWatch.lastTcpReceive(
                relayPorts: relayPorts, servingPort: options.tcpRelayPort, now: now)
            {
                isolation.heard(at: heard)
            }
        }
        // Without the socket (not found among the descriptors) there is nothing to judge by.
        let alone = socketWatch != nil && isolation.isolated(now: now)
        let isConnected = toxConnected && !alone
        guard isConnected != connected else { return }
        if !isConnected {
            Self.log.warning(
                alone
                    ? "toxcore says it is connected, but no other node was heard for \(isolation.silence): off the network; asking the bootstrap nodes again in 10 s"
                    : "lost the network; asking the bootstrap nodes again in 10 s")
        }
        connected = isConnected
        recovery.connectionChanged(connected: isConnected, now: clock.now)
        let stretch = offline.connectionChanged(connected: isConnected, now: clock.now)
        emit(.connection(connected: isConnected))
        if let stretch, isReady {
            let report = reachability()
            Self.log.info(
                "back on the network after \(stretch) s (\(report.rebootstraps) re-bootstraps, \(report.restarts) restarts so far)"
            )
            emit(.backOnline(offlineSeconds: stretch, reachability: report))
        }
        if isConnected, !isReady {
            isReady = true
            emit(.ready)
            requestPull()
        }
    }
}
