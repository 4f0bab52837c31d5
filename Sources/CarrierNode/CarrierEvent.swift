import Foundation

/// Everything a node reports, in the order it happened. Subscribe with
/// `Carrier.events()`; events for a registered extension go to that
/// extension's stream instead (`Carrier.registerExtension`).
public enum CarrierEvent: Sendable {
    /// The node's own link to the network went up or down.
    case connection(connected: Bool)
    /// The node is connected for the first time since start.
    case ready
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

public enum Presence: String, Sendable, Codable {
    case none, away, busy
}

public typealias MessageId = UInt32

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

public struct FriendInfo: Equatable, Sendable, Codable {
    public var userId: UserId
    public var label: String
    public var connected: Bool
    /// nil while offline.
    public var link: FriendLink?
    public var presence: Presence
    public var info: UserInfo
}

/// An invite that arrived and awaits a reply (`Carrier.replyInvite`).
public struct IncomingInvite: Sendable, Equatable {
    public var from: UserId
    public var extensionName: String?
    public var id: UInt64
    public var data: [UInt8]
}

public struct InviteReply: Equatable, Sendable {
    public var status: Int32
    public var reason: String?
    public var data: [UInt8]

    public init(status: Int32, reason: String? = nil, data: [UInt8] = []) {
        self.status = status
        self.reason = reason
        self.data = data
    }

    /// Carrier's status for an invite with no reply in time (CARRIER_STATUS_TIMEOUT).
    public static let timeoutStatus: Int32 = 1
    public static let timeout = InviteReply(status: timeoutStatus, reason: "timeout")
    /// What the node answers by itself to an invite for an extension nobody registered.
    public static let unknownExtensionStatus: Int32 = -2
}

/// A group's id: the 32-byte conference id in base58.
public struct GroupId: Hashable, Sendable, CustomStringConvertible, Codable {
    public let bytes: [UInt8]
    init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }
    public init?(_ text: String) {
        guard let bytes = Base58.decode(text) else { return nil }
        self.init(bytes: bytes)
    }
    public var description: String { Base58.encode(bytes) }
}

public struct GroupPeer: Equatable, Sendable {
    public var userId: UserId
    public var name: String
}

/// Counters of what the node refused from the network.
public struct NodeStats: Equatable, Sendable {
    public var malformedPackets = 0
    public var rejectedFragments = 0
    public var expiredTransfers = 0
    public var unknownExtension = 0
    public var messagesSent = 0
    public var messagesReceived = 0
    /// Times the node, off the network, asked its bootstrap nodes again.
    public var rebootstraps = 0
}
