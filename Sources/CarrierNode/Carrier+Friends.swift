import CToxcore
import CarrierWire

extension Carrier {
    /// Sends a friend request to an address, with a greeting. The friend
    /// appears in the list at once; `.friendAdded` follows when it accepts.
    public func addFriend(address text: String, hello: String) throws(CarrierError) {
        try ensureAlive()
        guard let address = CarrierAddress(text) else { throw .invalidAddress(text) }
        guard address.userId != userId else { throw .invalidArgument("that is this node's own address") }
        if friends[address.userId] != nil, !awaitingAcceptance.contains(address.userId) {
            throw .alreadyFriend(address.userId.description)
        }
        let info = userInfo()
        let payload = CarrierPacket.friendRequest(
            .init(
                name: info.name.isEmpty ? nil : info.name,
                description: info.description.isEmpty ? nil : info.description, hello: hello)
        ).encode()
        guard payload.count <= CarrierLimits.maxFriendRequestPayload else {
            throw .tooLong(
                "the greeting makes the request \(payload.count) bytes, at most \(CarrierLimits.maxFriendRequestPayload)"
            )
        }
        try sendFriendRequest(address: address, payload: payload)
        depositFriendRequest(payload, to: address)
    }

    /// Sends a raw request payload; internal so tests can send malformed ones.
    func sendFriendRequest(address: CarrierAddress, payload: [UInt8]) throws(CarrierError) {
        try ensureAlive()
        if let existing = friends[address.userId] {
            // A request again (the friend may have missed it): toxcore only resends after delete + add.
            tox_friend_delete(tox, existing.number, nil)
            friends[address.userId] = nil
            friendIds[existing.number] = nil
            friendLinksChanged()
            newLinkChanged(address.userId, up: false)
        }
        var error = TOX_ERR_FRIEND_ADD_OK
        let number = tox_friend_add(tox, address.bytes, payload, payload.count, &error)
        guard error == TOX_ERR_FRIEND_ADD_OK else {
            throw .tox(function: "tox_friend_add", code: Int(error.rawValue))
        }
        registerFriend(number: number)
        awaitingAcceptance.insert(address.userId)
        dirty = true
        noteActivity()
    }

    /// Accepts a friend request (or adds a friend by user id without one).
    public func acceptFriend(_ id: UserId) throws(CarrierError) {
        try ensureAlive()
        guard id != userId else { throw .invalidArgument("that is this node's own user id") }
        guard friends[id] == nil else { throw .alreadyFriend(id.description) }
        var error = TOX_ERR_FRIEND_ADD_OK
        let number = tox_friend_add_norequest(tox, id.publicKey, &error)
        guard error == TOX_ERR_FRIEND_ADD_OK else {
            throw .tox(function: "tox_friend_add_norequest", code: Int(error.rawValue))
        }
        registerFriend(number: number)
        dirty = true
        noteActivity()
        if let info = friendInfo(id) { emit(.friendAdded(info)) }
    }

    /// Removes a friend locally; pending receipts to it fail.
    public func removeFriend(_ id: UserId) throws(CarrierError) {
        try ensureAlive()
        guard let state = friends[id] else { throw .notFriend(id.description) }
        tox_friend_delete(tox, state.number, nil)
        forgetFriendTraffic(number: state.number, id: id, reason: "the friend was removed")
        friends[id] = nil
        friendIds[state.number] = nil
        refreshContacts()
        friendLinksChanged()
        newLinkChanged(id, up: false)
        labels[id] = nil
        awaitingAcceptance.remove(id)
        dirty = true
        emit(.friendRemoved(id))
    }

    /// Starts toxcore's link to a friend afresh (`FriendLinkRefresh` says
    /// why and when): the friend leaves toxcore and is added back at once, by
    /// key and without a request, so toxcore forgets the link and finds the
    /// friend anew. Our own record of the friend (user info, label) stays;
    /// toxcore's copy of its user info comes back when it connects. Only for
    /// an accepted friend that is not connected (nothing of it is in flight).
    func restartFriendLink(_ due: FriendLinkRefresh.Due) {
        let id = due.friend
        guard let state = friends[id], !state.connected, !awaitingAcceptance.contains(id) else { return }
        guard tox_friend_delete(tox, state.number, nil) else { return }
        friendIds[state.number] = nil
        counters.friendLinkRestarts += 1
        if due.left {
            Self.log.debug("\(id) left \(due.waited) ago: starting toxcore's link to it afresh")
        } else {
            Self.log.info("\(id) not online after \(due.waited) of waiting: starting toxcore's link to it afresh")
        }
        readdFriend(id)
    }

    /// Adds back a friend `restartFriendLink` took out of toxcore. Should
    /// toxcore refuse (it only can for want of memory), the friend is tried
    /// again on every loop, and the node's state is not saved until it is
    /// back, so the friend list on disk never loses it.
    func readdFriend(_ id: UserId) {
        var error = TOX_ERR_FRIEND_ADD_OK
        let number = tox_friend_add_norequest(tox, id.publicKey, &error)
        guard error == TOX_ERR_FRIEND_ADD_OK else {
            if friendsToReadd.insert(id).inserted {
                Self.log.error("cannot add \(id) back to toxcore (error \(error.rawValue)); trying again")
            }
            return
        }
        friendsToReadd.remove(id)
        if friends[id] == nil {
            _ = registerFriend(number: number)  // toxcore was started afresh meanwhile
        } else {
            friends[id]?.number = number
            friendIds[number] = id
        }
        dirty = true
    }

    /// Our own name for a friend (kept with the friend list, never sent).
    public func setLabel(_ label: String, for id: UserId) throws(CarrierError) {
        guard friends[id] != nil else { throw .notFriend(id.description) }
        guard label.utf8.count <= UserInfo.Limits.name else {
            throw .tooLong("a label is at most \(UserInfo.Limits.name) bytes")
        }
        labels[id] = label.isEmpty ? nil : label
        dirty = true
    }

    /// Whether `id` is a friend.
    public func isFriend(_ id: UserId) -> Bool { friends[id] != nil }

    /// Every friend: label, connection, presence and user info.
    public func friendList() -> [FriendInfo] {
        friends.keys.compactMap(friendInfo).sorted { $0.userId.description < $1.userId.description }
    }

    /// One friend, if it is one.
    public func friendInfo(_ id: UserId) -> FriendInfo? {
        guard let state = friends[id] else { return nil }
        return FriendInfo(
            userId: id, label: labels[id] ?? "", connected: state.connected, link: state.link, presence: state.presence,
            info: state.info)
    }

    /// Waits until a friend's link is up.
    public func waitUntilConnected(to id: UserId, timeout: Duration) async -> Bool {
        await wait(timeout: timeout, until: .friendConnected(id))
    }

    /// Waits until a friend is reached over `link`. On a fresh network toxcore
    /// connects friends through a TCP relay first and finds the direct UDP
    /// path seconds later; bulk traffic is much faster once it has.
    public func waitUntilLinked(to id: UserId, over link: FriendLink, timeout: Duration) async -> Bool {
        await wait(timeout: timeout, until: .friendLink(id, link))
    }

    func friendNumber(_ id: UserId) throws(CarrierError) -> UInt32 {
        try ensureAlive()  // every use of the number is a call into toxcore
        guard let state = friends[id] else { throw .notFriend(id.description) }
        return state.number
    }

    /// Parses `userId` or `userId:extension`.
    func parseTarget(_ target: String) throws(CarrierError) -> (UserId, String?) {
        let parts = target.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let id = UserId(parts[0]) else { throw .invalidUserId(parts[0]) }
        guard parts.count == 2 else { return (id, nil) }
        try Self.checkExtensionName(parts[1])
        return (id, parts[1])
    }

    /// An extension's name: 1 to 31 bytes without ':' (Carrier's rule).
    static func checkExtensionName(_ name: String) throws(CarrierError) {
        guard !name.isEmpty, name.utf8.count <= CarrierLimits.maxExtensionName, !name.contains(":") else {
            throw .invalidArgument(
                "extension name \"\(name)\" must be 1 to \(CarrierLimits.maxExtensionName) bytes without ':'")
        }
    }

    /// A friend's hello comes with its link, in the first round trips: one
    /// that has not come this long after the link is not coming.
    public static let helloWait = Duration.seconds(2)

    /// Whether `friend` speaks what this node adds beyond Carrier (it said
    /// so on its link, `ExtraPacket.hello`): false for a Carrier peer. Waits
    /// for a hello that may be on its way, until the link is `helloWait`
    /// old; nil while the friend is offline.
    public func speaksOurExtras(_ friend: UserId) async -> Bool? {
        guard let since = friends[friend]?.linkUpAt else { return nil }
        let left = Self.helloWait - (clock.now - since)
        if left > .zero { _ = await wait(timeout: left, until: .friendHelloOrGone(friend)) }
        guard friends[friend]?.linkUpAt != nil else { return nil }
        return friends[friend]?.extras.isEmpty == false
    }

    func forgetFriendTraffic(number: UInt32, id: UserId, reason: String) {
        if var queue = outgoing.removeValue(forKey: number) {
            for receipt in queue.removeAll() { finishReceipt(receipt, .error(reason)) }
        }
        for (receipt, pending) in receipts where pending.to == id { finishReceipt(receipt, .error(reason)) }
        reassembler.forget(id)
        toxReceipts[number] = nil
        friends[id]?.extras = []
    }
}
