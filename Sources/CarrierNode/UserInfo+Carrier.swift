import CarrierWire

/// User info as the Carrier `userinfo` packet carries it in the toxcore
/// status message (wire notes §2.4): the upstream fields, then the
/// "AgentNet" fork's client and profile fields, each left out when empty.
extension UserInfo {
    /// The packet for our status message.
    var carrierPacket: CarrierPacket {
        func optional(_ text: String) -> String? { text.isEmpty ? nil : text }
        return .userInfo(
            CarrierPacket.UserInfo(
                hasAvatar: hasAvatar, name: optional(name), description: description, phone: phone, gender: gender,
                email: email, region: region, protoVersion: client.protoVersion, platform: optional(client.platform),
                osVersion: optional(client.osVersion), appVersion: optional(client.appVersion),
                avatarUrl: optional(profile.avatarUrl), url: optional(profile.url), ens: optional(profile.ens),
                extra: optional(profile.extra)))
    }

    /// The info in a friend's status message; nil when it is not a
    /// `userinfo` packet within Carrier's limits.
    init?(statusMessage bytes: [UInt8]) {
        guard bytes.count <= CarrierLimits.maxUserInfoPacket,
            case .userInfo(let packet)? = try? CarrierPacket.decode(bytes)
        else { return nil }
        self.init()
        name = packet.name ?? ""
        description = packet.description
        phone = packet.phone
        gender = packet.gender
        email = packet.email
        region = packet.region
        hasAvatar = packet.hasAvatar
        client = ClientInfo(
            protoVersion: packet.protoVersion, platform: packet.platform ?? "", osVersion: packet.osVersion ?? "",
            appVersion: packet.appVersion ?? "")
        profile = ProfileExtension(
            avatarUrl: packet.avatarUrl ?? "", url: packet.url ?? "", ens: packet.ens ?? "", extra: packet.extra ?? "")
    }
}
