/// One Carrier control packet: the FlatBuffers `packet` table with its body
/// (wire notes §2, `Tests/CarrierWireTests/carrier-packet.fbs`). User info
/// travels as the toxcore status message, a friend request as the request's
/// payload, the others as toxcore friend messages, one packet each.
///
/// Decoding verifies the buffer (`FlatBufferReader`) and is stricter than
/// the reference decoder, which runs no verifier: the union's tag must match
/// `type`, every offset and length must lie in the buffer, and strings keep
/// Carrier's length limits. What a real Carrier peer sends passes
/// (`packets.json`: every vector).
public enum CarrierPacket: Equatable, Sendable {
    case userInfo(UserInfo)
    case friendRequest(FriendRequest)
    /// A message of at most 1024 bytes (`friendmsg`), to an extension if `ext`.
    case message(ext: String?, data: [UInt8])
    /// A piece of a larger message (`bulkmsg`).
    case bulk(Fragment)
    /// A piece of an invite (`invitereq`): `bundle` on the first only.
    case inviteRequest(Fragment)
    /// A piece of an invite's reply (`invitersp`): data when `status` is 0, else a reason.
    case inviteResponse(Fragment, status: Int32, reason: String?)

    /// The profile (`userinfo`). The 0xli "AgentNet" fork's fields follow the
    /// upstream ones (append-only, optional); upstream peers ignore them.
    public struct UserInfo: Equatable, Sendable {
        /// Whether the user has an avatar (the picture itself does not travel here).
        public var hasAvatar = false
        /// The display name, if set.
        public var name: String?
        /// A line about the user.
        public var description = ""
        /// Profile fields, as the reference carries them (empty when unset).
        public var phone = ""
        /// (See `phone`.)
        public var gender = ""
        /// (See `phone`.)
        public var email = ""
        /// (See `phone`.)
        public var region = ""
        /// The fork's `proto_version` (0: not said) and client fields.
        public var protoVersion: UInt32 = 0
        /// The fork's client fields: the platform ("linux"), …
        public var platform: String?
        /// … the operating system's version, …
        public var osVersion: String?
        /// … and the application's.
        public var appVersion: String?
        /// The fork's profile extension (`proto_version` 2): where the avatar is, …
        public var avatarUrl: String?
        /// … a home page, …
        public var url: String?
        /// … an ENS name, …
        public var ens: String?
        /// … and anything else the application puts there.
        public var extra: String?

        /// A profile; every field may be left at its default.
        public init(
            hasAvatar: Bool = false, name: String? = nil, description: String = "", phone: String = "",
            gender: String = "", email: String = "", region: String = "", protoVersion: UInt32 = 0,
            platform: String? = nil, osVersion: String? = nil, appVersion: String? = nil, avatarUrl: String? = nil,
            url: String? = nil, ens: String? = nil, extra: String? = nil
        ) {
            self.hasAvatar = hasAvatar
            self.name = name
            self.description = description
            self.phone = phone
            self.gender = gender
            self.email = email
            self.region = region
            self.protoVersion = protoVersion
            self.platform = platform
            self.osVersion = osVersion
            self.appVersion = appVersion
            self.avatarUrl = avatarUrl
            self.url = url
            self.ens = ens
            self.extra = extra
        }
    }

    /// The request's payload (`friendreq`).
    public struct FriendRequest: Equatable, Sendable {
        /// The display name, if set.
        public var name: String?
        /// The sender's description.
        public var description: String?
        /// The greeting the requester wrote.
        public var hello: String?

        /// A request; `name` and `description` are the sender's profile.
        public init(name: String? = nil, description: String? = nil, hello: String? = nil) {
            self.name = name
            self.description = description
            self.hello = hello
        }
    }

    /// One fragment of a bulk message, an invite or a reply.
    public struct Fragment: Equatable, Sendable {
        /// The extension it goes to (`userid:ext`), if any.
        public var ext: String?
        /// The transfer it belongs to (the sender's `time + rand`).
        public var tid: Int64
        /// The whole size on the first fragment, 0 on the others.
        public var totalSize: UInt32
        /// Invites and replies: the routing bundle, on the first fragment only.
        public var bundle: String?
        /// Its piece of the data (absent in a refusal).
        public var data: [UInt8]

        /// A fragment.
        public init(ext: String? = nil, tid: Int64, totalSize: UInt32 = 0, bundle: String? = nil, data: [UInt8] = []) {
            self.ext = ext
            self.tid = tid
            self.totalSize = totalSize
            self.bundle = bundle
            self.data = data
        }
    }

    /// `packet.type` for each packet (wire notes §2).
    public enum Kind: UInt8, Sendable {
        case userInfo = 3, friendRequest = 6, message = 33, inviteRequest = 34, inviteResponse = 35, bulk = 36

        /// The union tag of its body (`anybody`): userinfo 1 … bulkmsg 6.
        var unionTag: UInt8 {
            switch self {
            case .userInfo: 1
            case .friendRequest: 2
            case .message: 3
            case .inviteRequest: 4
            case .inviteResponse: 5
            case .bulk: 6
            }
        }
    }

    /// Its `packet.type`.
    public var kind: Kind {
        switch self {
        case .userInfo: .userInfo
        case .friendRequest: .friendRequest
        case .message: .message
        case .bulk: .bulk
        case .inviteRequest: .inviteRequest
        case .inviteResponse: .inviteResponse
        }
    }
}
