/// What this node adds beyond Carrier's packets (docs/protocol.md, "Beyond
/// Carrier"). They travel in toxcore lossless custom packets (id 160): a
/// Carrier peer registers no handler for those, so its toxcore drops them,
/// and nothing Carrier sends is changed by them. Our own field format
/// (WireFields.swift): a type byte, then tagged fields.
enum ExtraPacket: Equatable, Sendable {
    /// What this node speaks beyond Carrier (type 40), sent on every link
    /// that comes up. A friend that never sent it is a Carrier peer.
    case hello(features: Features)
    /// The receiver's verdict on a file transfer (type 38): `FileVerdict`.
    case fileResult(sha256: [UInt8], status: Int32, reason: String?)
    /// Where the sender's toxcore answers on this machine (type 39):
    /// its DHT key and UDP port, sent between two loopback-only nodes when a
    /// file waits for a new link, and answered once (`NewLinkWarmUp`).
    case dhtNode(key: [UInt8], port: UInt16)

    /// The extras a node takes, as bits (unknown bits are kept and ignored).
    struct Features: OptionSet, Equatable, Sendable {
        let rawValue: UInt32
        /// Invites sent again until answered, repeats answered from the reply kept.
        static let inviteResend = Features(rawValue: 1 << 0)
        /// File verdicts (`fileResult`) after toxcore file transfers.
        static let fileResults = Features(rawValue: 1 << 1)
        /// DHT hints between loopback-only nodes.
        static let dhtHints = Features(rawValue: 1 << 2)
        /// What this build speaks.
        static let ours: Features = [.inviteResend, .fileResults, .dhtHints]
    }

    enum Kind: UInt8 {
        case fileResult = 38, dhtNode = 39, hello = 40
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
    static let maxPacketSize = 1372
    static let maxExtensionNameLength = 31
    static let maxReasonLength = 255

    func encode() -> [UInt8] {
        switch self {
        case .hello(let features):
            var writer = WireWriter(type: Kind.hello.rawValue)
            writer.add(.features, integer: features.rawValue)
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
        }
    }

    static func decode(_ bytes: some Collection<UInt8>) throws(PacketError) -> ExtraPacket {
        guard bytes.count <= maxPacketSize else { throw .tooLarge(bytes.count) }
        let reader = try WireReader(bytes)
        guard let kind = Kind(rawValue: reader.type) else { throw .unknownType(reader.type) }
        switch kind {
        case .hello:
            return .hello(features: Features(rawValue: try reader.requireInteger(.features)))
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
        }
    }

    /// An extension name in our field format (Express's sealed messages).
    static func extensionName(_ reader: WireReader) throws(PacketError) -> String? {
        guard let name = try reader.string(.ext, max: maxExtensionNameLength) else { return nil }
        guard !name.isEmpty, !name.contains(":") else { throw .badField(WireTag.ext.rawValue) }
        return name
    }
}
