import CarrierWire

/// What a node tells its friends about itself: the profile, the client it
/// runs and the profile extension, as in the reference SDK's CarrierUserInfo,
/// CarrierClientInfo and CarrierProfileExt. It travels in the toxcore status
/// message (at most 1007 bytes encoded) and the name also as the toxcore name.
public struct UserInfo: Equatable, Sendable, Codable {
    /// Display name (at most `Limits.name` bytes).
    public var name: String = ""
    /// A status message (toxcore's status message).
    public var description: String = ""
    /// As the user writes it.
    public var gender: String = ""
    /// As the user writes it.
    public var phone: String = ""
    /// As the user writes it.
    public var email: String = ""
    /// As the user writes it.
    public var region: String = ""
    /// Whether the user has an avatar (the reference's flag).
    public var hasAvatar: Bool = false
    /// The user's client software.
    public var client: ClientInfo = ClientInfo()
    /// Profile links.
    public var profile: ProfileExtension = ProfileExtension()

    /// Empty info.
    public init() {}

    /// The client software a user runs.
    public struct ClientInfo: Equatable, Sendable, Codable {
        /// Its protocol version.
        public var protoVersion: UInt32 = 0
        /// `linux`, `android`, …
        public var platform: String = ""
        /// The OS's version.
        public var osVersion: String = ""
        /// The app's version.
        public var appVersion: String = ""
        /// Client info from its fields.
        public init(protoVersion: UInt32 = 0, platform: String = "", osVersion: String = "", appVersion: String = "") {
            self.protoVersion = protoVersion
            self.platform = platform
            self.osVersion = osVersion
            self.appVersion = appVersion
        }
    }

    /// Links a profile carries.
    public struct ProfileExtension: Equatable, Sendable, Codable {
        /// Where the avatar is.
        public var avatarUrl: String = ""
        /// A home page.
        public var url: String = ""
        /// An ENS name.
        public var ens: String = ""
        /// Anything else, as the application uses it.
        public var extra: String = ""
        /// A profile from its fields.
        public init(avatarUrl: String = "", url: String = "", ens: String = "", extra: String = "") {
            self.avatarUrl = avatarUrl
            self.url = url
            self.ens = ens
            self.extra = extra
        }
    }

    /// Carrier's per-field limits in UTF-8 bytes (wire notes §2.1).
    public enum Limits {
        /// Bytes at most in `name`.
        public static let name = 63
        /// Bytes at most in `description`.
        public static let description = 127
        /// Bytes at most in `phone`.
        public static let phone = 31
        /// Bytes at most in `email`.
        public static let email = 127
        /// Bytes at most in `region`.
        public static let region = 127
        /// Bytes at most in `gender`.
        public static let gender = 31
        /// Bytes at most in each client field.
        public static let clientField = 63
        /// Bytes at most in each profile field.
        public static let profileField = 255
    }

    /// Checks every field against its limit and the encoded size against the status message.
    func validate() throws(CarrierError) {
        let checks: [(String, String, Int)] = [
            ("name", name, Limits.name), ("description", description, Limits.description),
            ("phone", phone, Limits.phone), ("email", email, Limits.email), ("region", region, Limits.region),
            ("gender", gender, Limits.gender), ("platform", client.platform, Limits.clientField),
            ("osVersion", client.osVersion, Limits.clientField), ("appVersion", client.appVersion, Limits.clientField),
            ("avatarUrl", profile.avatarUrl, Limits.profileField), ("url", profile.url, Limits.profileField),
            ("ens", profile.ens, Limits.profileField), ("extra", profile.extra, Limits.profileField),
        ]
        for (field, value, limit) in checks where value.utf8.count > limit {
            throw .tooLong("\(field) is \(value.utf8.count) bytes, at most \(limit)")
        }
        let size = carrierPacket.encode().count
        guard size <= CarrierLimits.maxUserInfoPacket else {
            throw .tooLong("user info encodes to \(size) bytes, at most \(CarrierLimits.maxUserInfoPacket)")
        }
    }
}
