import CToxcore
import CarrierWire
import Foundation

/// The node's identity (address, nospam, keys, signatures) and what it says
/// of itself (user info, presence).
extension Carrier {
    // MARK: Identity

    /// Our address: what others pass to `addFriend` (user id, nospam, checksum).
    public func address() -> CarrierAddress {
        if killed, let address = lastKnown.address { return address }
        var bytes = [UInt8](repeating: 0, count: CarrierAddress.size)
        tox_self_get_address(tox, &bytes)
        return CarrierAddress(bytes: bytes) ?? CarrierAddress(userId: userId, nospam: tox_self_get_nospam(tox))
    }

    /// The nospam part of our address.
    public func nospam() -> UInt32 { address().nospam }

    /// Changes the nospam: friend requests to the old address stop arriving.
    public func setNospam(_ value: UInt32) throws(CarrierError) {
        try ensureAlive()
        tox_self_set_nospam(tox, value)
        dirty = true
    }

    /// The 32-byte secret key, for backup and `CarrierOptions.secretKey`. Handle with care.
    public func exportSecretKey() -> [UInt8] {
        guard !killed else { return lastKnown.secretKey }
        var key = [UInt8](repeating: 0, count: 32)
        tox_self_get_secret_key(tox, &key)
        return key
    }

    /// The identity as a Carrier app keeps it (`carrier.data`, wire notes
    /// §8.2): toxcore's save and the friend labels, for `CarrierOptions.carrierData`
    /// or a Carrier app's data directory. It holds the secret key: handle with care.
    public func exportCarrierData() -> [UInt8] {
        var savedata = [UInt8](repeating: 0, count: killed ? 0 : tox_get_savedata_size(tox))
        if !killed { tox_get_savedata(tox, &savedata) }
        let named = labels.compactMap { id, text in
            friends[id].map { CarrierDataFile.Label(friendNumber: $0.number, text: text) }
        }
        return CarrierDataFile(toxSavedata: savedata, labels: named.sorted { $0.friendNumber < $1.friendNumber })
            .encode()
    }

    /// Signs a message with the identity's key (XEdDSA, `IdentitySignature`); anyone can verify it with `IdentitySignature.verify` and our user id.
    public func sign(_ message: [UInt8]) throws(CarrierError) -> [UInt8] {
        // The same key and scheme authenticate Express requests: a "challenge"
        // that is an Express request would let its sender pull or delete our
        // mail. Messages in Express's domain are refused here.
        guard !message.starts(with: Self.reservedSigningPrefix) else {
            throw .invalidArgument(
                "messages that start with \"carrier-express-\" are Express requests and are not signed here")
        }
        var key = exportSecretKey()
        defer { for index in key.indices { key[index] = 0 } }
        do { return try IdentitySignature.sign(message: message, secretKey: key) } catch {
            throw .invalidArgument(error.description)
        }
    }

    /// What `sign` refuses to sign: the start of every Express request and
    /// answer (`ExpressProtocol.version`), whose signatures the node makes itself.
    public static let reservedSigningPrefix = Array("carrier-express-".utf8)

    /// Verifies a signature with a user id alone; no node needed.
    public static func verify(message: [UInt8], signature: [UInt8], userId: UserId) -> Bool {
        IdentitySignature.verify(message: message, signature: signature, userId: userId)
    }

    /// This node's DHT key, which changes on every start; others bootstrap with it.
    public func dhtKey() -> [UInt8] {
        guard !killed else { return [] }
        var key = [UInt8](repeating: 0, count: 32)
        tox_self_get_dht_id(tox, &key)
        return key
    }

    /// The UDP port toxcore bound, if it did.
    public func udpPort() -> UInt16? {
        guard !killed else { return nil }
        var error = TOX_ERR_GET_PORT_OK
        let port = tox_self_get_udp_port(tox, &error)
        return error == TOX_ERR_GET_PORT_OK ? port : nil
    }

    /// The `host:port:key` entry others pass to `--bootstrap` to join through this node.
    public func bootstrapEntry(host: String = "127.0.0.1") -> BootstrapNode? {
        udpPort().map { BootstrapNode(host: host, port: $0, publicKey: dhtKey()) }
    }

    // MARK: Self info

    /// Our user info, as friends see it.
    public func userInfo() -> UserInfo { selfInfo }

    /// Sets our user info (fields over their limits are an error); friends get it now or when they connect.
    public func setUserInfo(_ info: UserInfo) throws(CarrierError) {
        try ensureAlive()
        try info.validate()
        let name = Array(info.name.utf8)
        let packet = info.carrierPacket.encode()
        guard tox_self_set_name(tox, name, name.count, nil),
            tox_self_set_status_message(tox, packet, packet.count, nil)
        else { throw .tox(function: "tox_self_set_status_message", code: -1) }
        dirty = true
        noteActivity()
    }

    /// Sets the client part of our user info.
    public func setClientInfo(_ client: UserInfo.ClientInfo) throws(CarrierError) {
        var info = selfInfo
        info.client = client
        try setUserInfo(info)
    }

    /// Sets the profile part of our user info.
    public func setProfileExtension(_ profile: UserInfo.ProfileExtension) throws(CarrierError) {
        var info = selfInfo
        info.profile = profile
        try setUserInfo(info)
    }

    /// Our presence, as friends see it.
    public func presence() -> Presence {
        guard !killed else { return lastKnown.presence }
        return switch tox_self_get_status(tox) {
        case TOX_USER_STATUS_AWAY: .away
        case TOX_USER_STATUS_BUSY: .busy
        default: .none
        }
    }

    /// Sets our presence (none, away, busy).
    public func setPresence(_ presence: Presence) throws(CarrierError) {
        try ensureAlive()
        let status: Tox_User_Status =
            switch presence {
            case .none: TOX_USER_STATUS_NONE
            case .away: TOX_USER_STATUS_AWAY
            case .busy: TOX_USER_STATUS_BUSY
            }
        tox_self_set_status(tox, status)
        dirty = true
        noteActivity()
    }

    var selfInfo: UserInfo {
        guard !killed else { return lastKnown.info }
        let length = tox_self_get_status_message_size(tox)
        var bytes = [UInt8](repeating: 0, count: length)
        tox_self_get_status_message(tox, &bytes)
        return UserInfo(statusMessage: bytes) ?? UserInfo()
    }
}
