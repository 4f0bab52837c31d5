/// The Carrier network's limits (wire notes §1.3 and §2.1), as the reference
/// library enforces them when it sends; this layer holds what it receives to
/// them too.
public enum CarrierLimits {
    /// toxcore's limit for one friend message: one whole Carrier packet.
    public static let maxToxMessage = 1372
    /// toxcore's limit for a friend request's payload.
    public static let maxFriendRequestPayload = 1016
    /// toxcore's limit for the status message that carries user info.
    public static let maxUserInfoPacket = 1007
    /// A message sent whole (`friendmsg`); longer ones go in bulk fragments of this size.
    public static let maxMessage = 1024
    /// A whole bulk message (the "AgentNet" fork allows 16 MiB to its own peers).
    public static let maxBulkMessage = 5 << 20
    /// An invite's or a reply's data, and the size of its fragments.
    public static let maxInviteData = 8192
    /// The data of one invite fragment at most.
    public static let inviteFragment = 1280
    /// Strings.
    public static let maxBundle = 511
    /// A refusal's reason.
    public static let maxReason = 255
    /// An extension's name.
    public static let maxExtensionName = 31
    /// A user id in base58 (32 bytes).
    public static let maxUserId = 45
    /// An address in base58 (38 bytes).
    public static let maxAddress = 52
    /// User info: a name, …
    public static let maxName = 63
    /// … a description, …
    public static let maxDescription = 127
    /// … a phone number, …
    public static let maxPhone = 31
    /// … a gender, …
    public static let maxGender = 31
    /// … an email address, …
    public static let maxEmail = 127
    /// … and a region.
    public static let maxRegion = 127
    /// The fork's client fields (platform, versions): ours, kept short.
    public static let maxClientField = 63
    /// The fork's profile extension fields (avatar URL, URL, ENS name, extra).
    public static let maxProfileField = 255
    /// A friend request's hello: what fits beside a name and a description in the payload.
    public static let maxHello = maxFriendRequestPayload
}
