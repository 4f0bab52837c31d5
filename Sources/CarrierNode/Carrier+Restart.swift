import CToxcore

extension Carrier {
    /// Starts toxcore afresh from its own state: the same identity, friends
    /// and conferences, with a new DHT key, new ports and empty peer lists
    /// (`OfflineRecovery` says why and when). For the rest of the node it is
    /// as if every friend went offline at once: queued packets are dropped
    /// (invites waiting for a reply are sent again when the friend is back),
    /// file transfers are interrupted and resume from the bytes they have.
    /// Calls and sessions do not ride on toxcore and go on; their signals wait.
    func restartTox(reason: String) {
        guard running, !killed else { return }
        counters.restarts += 1
        Self.log.warning("\(reason): starting toxcore afresh (restart \(counters.restarts))")
        var savedata = [UInt8](repeating: 0, count: tox_get_savedata_size(tox))
        tox_get_savedata(tox, &savedata)
        let replacement: OpaquePointer
        do {
            replacement = try Self.makeTox(options: options, savedata: savedata)
        } catch {
            Self.log.error("cannot start toxcore afresh: \(error); keeping the old instance")
            recovery.restarted(now: clock.now)
            return
        }
        for (number, friend) in friendIds where friends[friend]?.connected == true {
            friends[friend]?.link = nil
            newLinkChanged(friend, up: false)
            fileLinkChanged(friend, connected: false)
            forgetFriendTraffic(number: number, id: friend, reason: "the node restarted toxcore")
            emit(.friendConnection(friend, connected: false))
        }
        outgoing = [:]
        files.forgetSlots()
        thread.watch(nil)
        _ = buffer.drain()  // events of the old instance
        tox_kill(tox)
        tox = replacement
        ToxEventBuffer.install(on: tox)
        friends = [:]
        friendIds = [:]
        for (id, state) in Self.readFriends(tox: tox) {
            friends[id] = state
            friendIds[state.number] = id
        }
        for node in options.bootstrapNodes { bootstrap(node) }
        thread.watch(udpPort().flatMap { SocketWatch(udpPort: $0) })
        toxConnected = false
        isolation.restarted(now: clock.now)
        recovery.restarted(now: clock.now)
        emit(.toxRestarted(reason: reason))
    }
}
