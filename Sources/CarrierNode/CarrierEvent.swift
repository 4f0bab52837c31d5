import CarrierWire
import Foundation

/// Everything a node reports, in the order it happened. Subscribe with
/// `Carrier.events()`; events for a registered extension go to that
/// extension's stream instead (`Carrier.registerExtension`).
public enum CarrierEvent: Sendable {
    /// The node's own link to the network went up or down.
    case connection(connected: Bool)
    /// The node is connected for the first time since start.
    case ready
    /// The node is back on the network after `offlineSeconds` off it, and how it has stood since it started.
    case backOnline(offlineSeconds: Double, reachability: Reachability)
    /// The node started toxcore afresh from its own state, and why (`OfflineRecovery`).
    case toxRestarted(reason: String)
    case friendRequest(from: UserId, name: String?, description: String?, hello: String)
    case friendAdded(FriendInfo)
    case friendRemoved(UserId)
    case friendConnection(UserId, connected: Bool)
    case friendPresence(UserId, Presence)
    case friendInfo(UserId, UserInfo)
    /// `offline`: stored by an Express node while this node was away;
    /// `timestamp` is then when the friend sent it.
    case message(from: UserId, extension: String?, data: [UInt8], timestamp: Date, offline: Bool)
    case receipt(MessageId, to: UserId, state: ReceiptState)
    case inviteRequest(IncomingInvite)
    case groupInvite(from: UserId, cookie: [UInt8])
    case groupConnected(GroupId)
    case groupMessage(GroupId, from: UserId, data: [UInt8])
    case groupTitle(GroupId, title: String)
    case groupPeersChanged(GroupId)
    /// A file transfer between friends moved on (`Carrier.sendFile`, `acceptFile`).
    case file(FileTransferEvent)
    /// Something from the network was refused (malformed, oversize, unknown
    /// extension, ...). Counted in `Carrier.stats()` as well.
    case dropped(from: UserId?, reason: String)
}

/// What a user says about being there: none (available), away, busy.
public enum Presence: String, Sendable, Codable {
    case none, away, busy
}

/// A message's id for its receipt.
public typealias MessageId = UInt32

/// How a message ended: delivered, stored offline, or not delivered.
public enum ReceiptState: Equatable, Sendable {
    /// The friend's node acknowledged every piece of the message.
    case delivered
    /// Stored for later delivery by the offline-delivery service.
    case offline
    case error(String)
}

/// How a friend is reached: directly over UDP, or through a TCP relay.
public enum FriendLink: String, Sendable, Codable {
    case udp, tcp
}

/// A friend as the node knows it.
public struct FriendInfo: Equatable, Sendable, Codable {
    /// The friend's user id.
    public var userId: UserId
    /// Our name for the friend (`setLabel`).
    public var label: String
    /// Whether the friend is online now.
    public var connected: Bool
    /// nil while offline.
    public var link: FriendLink?
    /// The friend's presence.
    public var presence: Presence
    /// The friend's user info, as it last sent it.
    public var info: UserInfo
}

/// An invite that arrived and awaits a reply (`Carrier.replyInvite`).
public struct IncomingInvite: Sendable, Equatable {
    /// Who sent it.
    public var from: UserId
    /// The extension it was sent to (nil: the plain invite channel).
    public var extensionName: String?
    /// The invite's id, for the reply (Carrier's `tid`).
    public var id: UInt64
    /// What it carries (up to 8 KB).
    public var data: [UInt8]
    /// Carrier's routing bundle, if the sender set one (at most 511 bytes).
    public var bundle: String? = nil
}

/// The answer to an invite: a status (0: fine), a reason and data.
public struct InviteReply: Equatable, Sendable {
    /// 0 for success; anything else is an error status.
    public var status: Int32
    /// Why, for an error status.
    public var reason: String?
    /// What the reply carries.
    public var data: [UInt8]
    /// Carrier's routing bundle, if the replier set one.
    public var bundle: String?

    /// A reply.
    public init(status: Int32, reason: String? = nil, data: [UInt8] = [], bundle: String? = nil) {
        self.status = status
        self.reason = reason
        self.data = data
        self.bundle = bundle
    }

    /// Carrier's status for an invite with no reply in time (CARRIER_STATUS_TIMEOUT).
    public static let timeoutStatus: Int32 = 1
    /// The reply an invite gets when none came in time.
    public static let timeout = InviteReply(status: timeoutStatus, reason: "timeout")
    /// What the node answers by itself to an invite for an extension nobody registered.
    public static let unknownExtensionStatus: Int32 = -2
}

/// A group's id: the 32-byte conference id in base58.
public struct GroupId: Hashable, Sendable, CustomStringConvertible, Codable {
    /// The 32-byte conference id.
    public let bytes: [UInt8]
    init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }
    /// A group id from its base58 form; nil if it is not one.
    public init?(_ text: String) {
        guard let bytes = Base58.decode(text) else { return nil }
        self.init(bytes: bytes)
    }
    /// The id in base58.
    public var description: String { Base58.encode(bytes) }
}

/// A member of a group.
public struct GroupPeer: Equatable, Sendable {
    /// The member's user id.
    public var userId: UserId
    /// The name it gives in the group.
    public var name: String
}

/// Counters of what the node refused from the network.
public struct NodeStats: Equatable, Sendable {
    /// Packets from friends that did not decode.
    public var malformedPackets = 0
    /// Fragments of messages or invites refused (over a limit, out of order, …).
    public var rejectedFragments = 0
    /// Fragmented messages or invites dropped unfinished.
    public var expiredTransfers = 0
    /// Invites for extensions nobody registered.
    public var unknownExtension = 0
    /// Messages sent.
    public var messagesSent = 0
    /// Messages received.
    public var messagesReceived = 0
    /// Times the node, off the network, asked its bootstrap nodes again.
    public var rebootstraps = 0
    /// Times the node, off the network for long, started toxcore afresh.
    public var restarts = 0
    /// Times toxcore's link to a friend started afresh: one that left, or one waited for (`FriendLinkRefresh`).
    public var friendLinkRestarts = 0
    /// Friends' DHT keys and ports heard on a loopback-only node, and asked for nodes (`Carrier+DhtHint`).
    public var dhtHints = 0
    /// Invites sent again for want of a reply (`Carrier.inviteResendInterval`).
    public var invitesResent = 0
    /// Invites that came again and were not given to the app again.
    public var repeatedInvites = 0
}
