/// One stored message as an Express node hands it back (`pullmsg`, wire
/// notes §5.2), a FlatBuffers table of its own (root offset at 4, no file
/// identifier): `{id:ulong, from:string, type:ubyte, timestamp:ulong,
/// address:string, payload:[ubyte]}`.
public struct CarrierPullMessage: Equatable, Sendable {
    /// A message (`'M'`: the payload is `box(friend key, friendmsg)`) or a
    /// friend request (`'R'`: the payload is the plain friendreq packet).
    public enum Kind: UInt8, Sendable {
        case message = 0x4D
        case friendRequest = 0x52
    }

    /// The node's id for it.
    public var id: UInt64
    /// The sender's user id.
    public var from: String
    /// What it holds.
    public var kind: Kind
    /// When the node took it, in milliseconds since 1970.
    public var timestamp: UInt64
    /// A friend request's target address (the recipient checks it is its own).
    public var address: String?
    /// The message or request (see `Kind`).
    public var payload: [UInt8]

    /// A record's message.
    public init(id: UInt64, from: String, kind: Kind, timestamp: UInt64, address: String? = nil, payload: [UInt8]) {
        self.id = id
        self.from = from
        self.kind = kind
        self.timestamp = timestamp
        self.address = address
        self.payload = payload
    }

    /// Its FlatBuffers bytes.
    public func encode() -> [UInt8] {
        var table = FlatBufferWriter.Table()
        table.add(0, .u64(id))
        table.add(1, .string(from))
        table.add(2, .u8(kind.rawValue))
        table.add(3, .u64(timestamp))
        table.add(4, address.map { .string($0) })
        table.add(5, .bytes(payload))
        return FlatBufferWriter.encode(table)
    }

    /// The message in `bytes`, verified; nil if it is not one within Carrier's limits.
    public static func decode(_ bytes: [UInt8]) -> CarrierPullMessage? {
        guard bytes.count <= CarrierExpress.maxBox else { return nil }
        let reader = FlatBufferReader(bytes)
        do {
            let root = try reader.root()
            guard let from = try reader.string(1, of: root), from.utf8.count <= CarrierLimits.maxUserId,
                let type = try reader.u8(2, of: root), let kind = Kind(rawValue: type),
                let payload = try reader.bytes(5, of: root)
            else { return nil }
            let address = try reader.string(4, of: root)
            if let address, address.utf8.count > CarrierLimits.maxAddress { return nil }
            return CarrierPullMessage(
                id: try reader.u64(0, of: root) ?? 0, from: from, kind: kind,
                timestamp: try reader.u64(3, of: root) ?? 0, address: address, payload: Array(payload))
        } catch {
            return nil
        }
    }
}
