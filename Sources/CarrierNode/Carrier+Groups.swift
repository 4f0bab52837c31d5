import CToxcore
import CarrierWire

/// Groups are toxcore conferences (text type). A group's id is its 32-byte
/// conference id in base58; peers are identified by public key, since
/// toxcore renumbers them as they come and go.
extension Carrier {
    /// Makes a group (a toxcore conference) with us in it.
    public func createGroup() throws(CarrierError) -> GroupId {
        try ensureAlive()
        var error = TOX_ERR_CONFERENCE_NEW_OK
        let number = tox_conference_new(tox, &error)
        guard error == TOX_ERR_CONFERENCE_NEW_OK else {
            throw .tox(function: "tox_conference_new", code: Int(error.rawValue))
        }
        noteActivity()
        return try groupId(number: number)
    }

    /// Invites an online friend to a group; it joins with `joinGroup` on the invite it gets.
    public func inviteToGroup(_ group: GroupId, friend: UserId) throws(CarrierError) {
        let number = try conferenceNumber(group)
        let friendNumber = try friendNumber(friend)
        var error = TOX_ERR_CONFERENCE_INVITE_OK
        guard tox_conference_invite(tox, friendNumber, number, &error) else {
            throw .tox(function: "tox_conference_invite", code: Int(error.rawValue))
        }
        noteActivity()
    }

    /// Joins with the cookie of a `.groupInvite` event.
    public func joinGroup(from friend: UserId, cookie: [UInt8]) throws(CarrierError) -> GroupId {
        let friendNumber = try friendNumber(friend)
        var error = TOX_ERR_CONFERENCE_JOIN_OK
        let number = tox_conference_join(tox, friendNumber, cookie, cookie.count, &error)
        guard error == TOX_ERR_CONFERENCE_JOIN_OK else {
            throw .tox(function: "tox_conference_join", code: Int(error.rawValue))
        }
        noteActivity()
        return try groupId(number: number)
    }

    /// Leaves a group (it is gone for us).
    public func leaveGroup(_ group: GroupId) throws(CarrierError) {
        let number = try conferenceNumber(group)
        guard tox_conference_delete(tox, number, nil) else { throw .tox(function: "tox_conference_delete", code: -1) }
    }

    /// Sends a message (1 to 1372 bytes) to every member.
    public func sendGroupMessage(_ data: [UInt8], to group: GroupId) throws(CarrierError) {
        let number = try conferenceNumber(group)
        guard !data.isEmpty, data.count <= CarrierLimits.maxToxMessage else {
            throw .tooLong("a group message is 1 to \(CarrierLimits.maxToxMessage) bytes")
        }
        var error = TOX_ERR_CONFERENCE_SEND_MESSAGE_OK
        guard tox_conference_send_message(tox, number, TOX_MESSAGE_TYPE_NORMAL, data, data.count, &error) else {
            throw .tox(function: "tox_conference_send_message", code: Int(error.rawValue))
        }
        noteActivity()
    }

    /// Sets a group's title, for every member.
    public func setGroupTitle(_ title: String, for group: GroupId) throws(CarrierError) {
        let number = try conferenceNumber(group)
        let bytes = Array(title.utf8)
        guard bytes.count <= Int(tox_max_name_length()) else {
            throw .tooLong("a title is at most \(tox_max_name_length()) bytes")
        }
        var error = TOX_ERR_CONFERENCE_TITLE_OK
        guard tox_conference_set_title(tox, number, bytes, bytes.count, &error) else {
            throw .tox(function: "tox_conference_set_title", code: Int(error.rawValue))
        }
        noteActivity()
    }

    /// A group's title.
    public func groupTitle(_ group: GroupId) throws(CarrierError) -> String {
        let number = try conferenceNumber(group)
        let size = tox_conference_get_title_size(tox, number, nil)
        var bytes = [UInt8](repeating: 0, count: size)
        _ = tox_conference_get_title(tox, number, &bytes, nil)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The members of a group, us included.
    public func groupPeers(_ group: GroupId) throws(CarrierError) -> [GroupPeer] {
        let number = try conferenceNumber(group)
        let count = tox_conference_peer_count(tox, number, nil)
        return (0..<count).compactMap { peer in
            var key = [UInt8](repeating: 0, count: 32)
            guard tox_conference_peer_get_public_key(tox, number, peer, &key, nil), let id = UserId(publicKey: key)
            else {
                return nil
            }
            let size = tox_conference_peer_get_name_size(tox, number, peer, nil)
            var name = [UInt8](repeating: 0, count: size)
            _ = tox_conference_peer_get_name(tox, number, peer, &name, nil)
            return GroupPeer(userId: id, name: String(decoding: name, as: UTF8.self))
        }
    }

    /// The groups we are in.
    public func groups() -> [GroupId] {
        guard !killed else { return [] }
        var numbers = [UInt32](repeating: 0, count: tox_conference_get_chatlist_size(tox))
        tox_conference_get_chatlist(tox, &numbers)
        return numbers.compactMap { try? groupId(number: $0) }
    }

    func groupId(number: UInt32) throws(CarrierError) -> GroupId {
        try ensureAlive()
        var bytes = [UInt8](repeating: 0, count: 32)
        guard tox_conference_get_id(tox, number, &bytes), let id = GroupId(bytes: bytes) else {
            throw .tox(function: "tox_conference_get_id", code: -1)
        }
        return id
    }

    func conferenceNumber(_ group: GroupId) throws(CarrierError) -> UInt32 {
        try ensureAlive()
        var error = TOX_ERR_CONFERENCE_BY_ID_OK
        let number = tox_conference_by_id(tox, group.bytes, &error)
        guard error == TOX_ERR_CONFERENCE_BY_ID_OK else { throw .noSuchGroup(group.description) }
        return number
    }
}
