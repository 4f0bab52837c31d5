/// The node's packets, carried in toxcore lossless custom packets (and the
/// friend request and status message for the two packets that travel there).
/// Type numbers and limits follow Carrier (wire notes §2); the encoding is our
/// own field format (WireFields.swift), documented in docs/protocol.md.
enum WirePacket: Equatable, Sendable {
    /// Profile, client info and profile extension (type 3), in the status message.
    case userInfo(UserInfo)
    /// Name, description and greeting (type 6), in the friend request.
    case friendRequest(FriendRequest)
    /// A message of at most one fragment (type 33). `messageId` asks for a receipt.
    case message(ext: String?, data: [UInt8], messageId: UInt32?)
    /// One fragment of an invite (type 34) or its reply (type 35), or of a bulk message (type 36).
    case inviteRequest(Fragment)
    case inviteResponse(Fragment, status: Int32, reason: String?)
    case bulk(Fragment)
    /// The receiver's answer to a message (type 37): status 0 when delivered
    /// to the application, else a reason it was refused.
    case receipt(messageId: UInt32, status: Int32, reason: String?)
    /// The receiver's verdict on a file transfer (type 38, ours): `FileVerdict`.
    case fileResult(sha256: [UInt8], status: Int32, reason: String?)
    /// Where the sender's toxcore answers on this machine (type 39, ours):
    /// its DHT key and UDP port, sent between two loopback-only nodes when a
    /// file waits for a new link, and answered once (`NewLinkWarmUp`).
    case dhtNode(key: [UInt8], port: UInt16)

    struct FriendRequest: Equatable, Sendable {
        var name: String?
        var description: String?
        var hello: String
    }

    /// A piece of a larger payload. Every piece names the transfer, its offset
    /// and the total, so a lost piece or a lying total is caught at once.
    struct Fragment: Equatable, Sendable {
        var ext: String?
        var transferId: UInt64
        var offset: UInt32
        var total: UInt32
        var data: [UInt8]
        /// Set on bulk-message fragments: the sender's message id for the receipt.
        var messageId: UInt32? = nil
    }

    enum Kind: UInt8 {
        case userInfo = 3, friendRequest = 6, message = 33, inviteRequest = 34, inviteResponse = 35, bulk = 36,
            receipt = 37, fileResult = 38, dhtNode = 39
    }

    /// The statuses of `fileResult`.
    enum FileVerdict: Int32 {
        /// Received whole, size and SHA-256 checked, stored.
        case completed = 0
        /// Not taken (no room, too many transfers, the application said no).
        case refused = 1
        /// Received, but the check failed or it could not be stored.
        case failed = 2
    }

    /// toxcore's limit for one lossless custom packet, less its id byte.
    static let maxMessageSize = 1372
    /// toxcore's limit for a friend request payload.
    static let maxFriendRequestSize = 1016
    /// toxcore's limit for the status message that carries user info.
    static let maxUserInfoSize = 1007
    /// Data bytes per fragment: what fits in one message beside the header fields
    /// (1 type + 34 ext + 11 id + 7 offset + 7 total + 7 message id + 265 status and reason + 3 data header
    /// stays under 1372 for a bulk fragment; an invite reply with data carries no reason).
    static let fragmentDataSize = 1280
    static let maxExtensionNameLength = 31
    static let maxReasonLength = 255

    func encode() -> [UInt8] {
        switch self {
        case .userInfo(let info):
            var writer = WireWriter(type: Kind.userInfo.rawValue)
            info.write(into: &writer)
            return writer.bytes
        case .friendRequest(let request):
            var writer = WireWriter(type: Kind.friendRequest.rawValue)
            writer.add(.name, string: request.name)
            writer.add(.description, string: request.description)
            writer.add(.hello, string: request.hello)
            return writer.bytes
        case .message(let ext, let data, let messageId):
            var writer = WireWriter(type: Kind.message.rawValue)
            writer.add(.ext, string: ext)
            if let messageId { writer.add(.messageId, integer: messageId) }
            writer.add(.data, data)
            return writer.bytes
        case .receipt(let messageId, let status, let reason):
            var writer = WireWriter(type: Kind.receipt.rawValue)
            writer.add(.messageId, integer: messageId)
            writer.add(.status, integer: status)
            writer.add(.reason, string: reason)
            return writer.bytes
        case .fileResult(let sha256, let status, let reason):
            var writer = WireWriter(type: Kind.fileResult.rawValue)
            writer.add(.fileId, sha256)
            writer.add(.status, integer: status)
            writer.add(.reason, string: reason)
            return writer.bytes
        case .dhtNode(let key, let port):
            var writer = WireWriter(type: Kind.dhtNode.rawValue)
            writer.add(.dhtKey, key)
            writer.add(.port, integer: port)
            return writer.bytes
        case .inviteRequest(let fragment):
            return fragment.encode(kind: .inviteRequest)
        case .inviteResponse(let fragment, let status, let reason):
            return fragment.encode(kind: .inviteResponse) { writer in
                writer.add(.status, integer: status)
                writer.add(.reason, string: reason)
            }
        case .bulk(let fragment):
            return fragment.encode(kind: .bulk)
        }
    }

    static func decode(_ bytes: some Collection<UInt8>) throws(PacketError) -> WirePacket {
        guard bytes.count <= maxMessageSize else { throw .tooLarge(bytes.count) }
        let reader = try WireReader(bytes)
        guard let kind = Kind(rawValue: reader.type) else { throw .unknownType(reader.type) }
        switch kind {
        case .userInfo:
            return .userInfo(try UserInfo(reader: reader))
        case .friendRequest:
            return .friendRequest(
                FriendRequest(
                    name: try reader.string(.name, max: UserInfo.Limits.name),
                    description: try reader.string(.description, max: UserInfo.Limits.description),
                    hello: try reader.string(.hello, max: maxFriendRequestSize) ?? ""))
        case .message:
            return .message(
                ext: try extensionName(reader), data: Array(try reader.require(.data)),
                messageId: try reader.integer(.messageId))
        case .receipt:
            return .receipt(
                messageId: try reader.requireInteger(.messageId), status: try reader.requireInteger(.status),
                reason: try reader.string(.reason, max: maxReasonLength))
        case .fileResult:
            let sha256 = Array(try reader.require(.fileId))
            guard sha256.count == 32 else { throw .badField(WireTag.fileId.rawValue) }
            return .fileResult(
                sha256: sha256, status: try reader.requireInteger(.status),
                reason: try reader.string(.reason, max: maxReasonLength))
        case .dhtNode:
            let key = Array(try reader.require(.dhtKey))
            guard key.count == 32 else { throw .badField(WireTag.dhtKey.rawValue) }
            let port: UInt16 = try reader.requireInteger(.port)
            guard port != 0 else { throw .badField(WireTag.port.rawValue) }
            return .dhtNode(key: key, port: port)
        case .inviteRequest:
            return .inviteRequest(try Fragment(reader: reader))
        case .inviteResponse:
            return .inviteResponse(
                try Fragment(reader: reader),
                status: try reader.requireInteger(.status),
                reason: try reader.string(.reason, max: maxReasonLength))
        case .bulk:
            return .bulk(try Fragment(reader: reader))
        }
    }

    static func extensionName(_ reader: WireReader) throws(PacketError) -> String? {
        guard let name = try reader.string(.ext, max: maxExtensionNameLength) else { return nil }
        guard !name.isEmpty, !name.contains(":") else { throw .badField(WireTag.ext.rawValue) }
        return name
    }
}

extension WirePacket.Fragment {
    init(reader: WireReader) throws(PacketError) {
        ext = try WirePacket.extensionName(reader)
        transferId = try reader.requireInteger(.transferId)
        offset = try reader.requireInteger(.offset)
        total = try reader.requireInteger(.total)
        data = Array(reader.bytes(.data) ?? [])
        messageId = try reader.integer(.messageId)
    }

    func encode(kind: WirePacket.Kind, extra: (inout WireWriter) -> Void = { _ in }) -> [UInt8] {
        var writer = WireWriter(type: kind.rawValue)
        writer.add(.ext, string: ext)
        writer.add(.transferId, integer: transferId)
        writer.add(.offset, integer: offset)
        writer.add(.total, integer: total)
        if let messageId { writer.add(.messageId, integer: messageId) }
        extra(&writer)
        writer.add(.data, data)
        return writer.bytes
    }

    /// Splits a payload into fragments of at most `WirePacket.fragmentDataSize` bytes.
    static func split(_ data: [UInt8], ext: String?, transferId: UInt64, messageId: UInt32? = nil) -> [WirePacket
        .Fragment]
    {
        let total = UInt32(data.count)
        guard !data.isEmpty else {
            return [.init(ext: ext, transferId: transferId, offset: 0, total: 0, data: [], messageId: messageId)]
        }
        return stride(from: 0, to: data.count, by: WirePacket.fragmentDataSize).map { start in
            let end = min(start + WirePacket.fragmentDataSize, data.count)
            return .init(
                ext: ext, transferId: transferId, offset: UInt32(start), total: total, data: Array(data[start..<end]),
                messageId: messageId)
        }
    }
}
