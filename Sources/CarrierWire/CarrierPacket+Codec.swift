/// Carrier packets to and from their FlatBuffers bytes. Field ids follow the
/// schema's order (`carrier-packet.fbs`): `packet{type:0, body_type:1, body:2}`.
extension CarrierPacket {
    /// Why bytes are not a Carrier packet.
    public enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The buffer does not hold what its offsets say.
        case malformed(String)
        /// A well-formed packet of a kind this node does not take, or one that breaks a limit.
        case refused(String)

        /// In words for a log.
        public var description: String {
            switch self {
            case .malformed(let why): "not a Carrier packet: \(why)"
            case .refused(let why): "Carrier packet refused: \(why)"
            }
        }
    }

    /// The largest buffer decoded: an offline message (Express carries a
    /// whole message, up to 5 MiB, as one packet) and its fields.
    public static let maxSize = CarrierLimits.maxBulkMessage + 4096

    /// The packet's bytes.
    public func encode() -> [UInt8] {
        var body = FlatBufferWriter.Table()
        switch self {
        case .userInfo(let info):
            if info.hasAvatar { body.add(0, .u8(1)) }
            body.add(1, info.name.map { .string($0) })
            // The reference writes the five other strings always, empty ones included.
            for (id, text) in [
                (2, info.description), (3, info.phone), (4, info.gender), (5, info.email), (6, info.region),
            ] {
                body.add(id, .string(text))
            }
            if info.protoVersion != 0 { body.add(7, .u32(info.protoVersion)) }
            body.add(8, info.platform.map { .string($0) })
            body.add(9, info.osVersion.map { .string($0) })
            body.add(10, info.appVersion.map { .string($0) })
            body.add(11, info.avatarUrl.map { .string($0) })
            body.add(12, info.url.map { .string($0) })
            body.add(13, info.ens.map { .string($0) })
            body.add(14, info.extra.map { .string($0) })
        case .friendRequest(let request):
            body.add(0, request.name.map { .string($0) })
            body.add(1, request.description.map { .string($0) })
            body.add(2, request.hello.map { .string($0) })
        case .message(let ext, let data):
            body.add(0, ext.map { .string($0) })
            body.add(1, .bytes(data))
        case .bulk(let fragment):
            body.add(0, fragment.ext.map { .string($0) })
            if fragment.totalSize != 0 { body.add(1, .u32(fragment.totalSize)) }
            if fragment.tid != 0 { body.add(2, .u64(UInt64(bitPattern: fragment.tid))) }
            body.add(3, .bytes(fragment.data))
        case .inviteRequest(let fragment):
            Self.addInvite(fragment, to: &body)
            body.add(4, .bytes(fragment.data))
        case .inviteResponse(let fragment, let status, let reason):
            Self.addInvite(fragment, to: &body)
            if status != 0 {
                body.add(4, .i32(status))
                body.add(5, reason.map { .string($0) })
            } else {
                body.add(6, .bytes(fragment.data))
            }
        }
        var packet = FlatBufferWriter.Table()
        packet.add(0, .u8(kind.rawValue))
        packet.add(1, .u8(kind.unionTag))
        packet.add(2, .table(body))
        return FlatBufferWriter.encode(packet)
    }

    private static func addInvite(_ fragment: Fragment, to body: inout FlatBufferWriter.Table) {
        body.add(0, fragment.ext.map { .string($0) })
        if fragment.tid != 0 { body.add(1, .u64(UInt64(bitPattern: fragment.tid))) }
        body.add(2, fragment.bundle.map { .string($0) })
        if fragment.totalSize != 0 { body.add(3, .u32(fragment.totalSize)) }
    }

    /// The packet in `bytes`, verified; an error says what is wrong.
    public static func decode(_ bytes: [UInt8]) throws(DecodeError) -> CarrierPacket {
        guard bytes.count <= maxSize else { throw .refused("\(bytes.count) bytes, at most \(maxSize)") }
        do {
            return try decode(FlatBufferReader(bytes))
        } catch let failure as FlatBufferReader.Failure {
            throw .malformed(failure.description)
        } catch let error as DecodeError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
    }

    private static func decode(_ reader: FlatBufferReader) throws -> CarrierPacket {
        let root = try reader.root()
        guard let type = try reader.u8(0, of: root), let kind = Kind(rawValue: type) else {
            throw DecodeError.refused("packet type \(try reader.u8(0, of: root) ?? 0) is not one Carrier sends")
        }
        guard let tag = try reader.u8(1, of: root), tag == kind.unionTag else {
            throw DecodeError.refused("a type \(type) packet whose body is not a \(kind) body")
        }
        guard let body = try reader.table(2, of: root, depth: 1) else {
            throw DecodeError.refused("a type \(type) packet without its body")
        }
        let text = { (id: Int, limit: Int, name: String) throws -> String? in
            guard let value = try reader.string(id, of: body) else { return nil }
            guard value.utf8.count <= limit else {
                throw DecodeError.refused("\(name) of \(value.utf8.count) bytes, at most \(limit)")
            }
            return value
        }
        let ext = { try text(0, CarrierLimits.maxExtensionName, "an extension name") }
        switch kind {
        case .userInfo:
            return .userInfo(
                UserInfo(
                    hasAvatar: (try reader.u8(0, of: body) ?? 0) != 0,
                    name: try text(1, CarrierLimits.maxName, "a name"),
                    description: try text(2, CarrierLimits.maxDescription, "a description") ?? "",
                    phone: try text(3, CarrierLimits.maxPhone, "a phone") ?? "",
                    gender: try text(4, CarrierLimits.maxGender, "a gender") ?? "",
                    email: try text(5, CarrierLimits.maxEmail, "an email") ?? "",
                    region: try text(6, CarrierLimits.maxRegion, "a region") ?? "",
                    protoVersion: try reader.u32(7, of: body) ?? 0,
                    platform: try text(8, CarrierLimits.maxClientField, "a platform"),
                    osVersion: try text(9, CarrierLimits.maxClientField, "an OS version"),
                    appVersion: try text(10, CarrierLimits.maxClientField, "an app version"),
                    avatarUrl: try text(11, CarrierLimits.maxProfileField, "an avatar URL"),
                    url: try text(12, CarrierLimits.maxProfileField, "a URL"),
                    ens: try text(13, CarrierLimits.maxProfileField, "an ENS name"),
                    extra: try text(14, CarrierLimits.maxProfileField, "a profile's extra")))
        case .friendRequest:
            return .friendRequest(
                FriendRequest(
                    name: try text(0, CarrierLimits.maxName, "a name"),
                    description: try text(1, CarrierLimits.maxDescription, "a description"),
                    hello: try text(2, CarrierLimits.maxHello, "a hello")))
        case .message:
            return .message(ext: try ext(), data: Array(try reader.bytes(1, of: body) ?? []))
        case .bulk:
            return .bulk(
                Fragment(
                    ext: try ext(), tid: Int64(bitPattern: try reader.u64(2, of: body) ?? 0),
                    totalSize: try reader.u32(1, of: body) ?? 0, data: Array(try reader.bytes(3, of: body) ?? [])))
        case .inviteRequest:
            return .inviteRequest(try invite(reader, body, ext: try ext(), dataField: 4))
        case .inviteResponse:
            // A refusal carries a reason and no data, an acceptance data and no reason (as the reference writes them).
            let status = Int32(bitPattern: try reader.u32(4, of: body) ?? 0)
            let reason = status != 0 ? try text(5, CarrierLimits.maxReason, "a reason") : nil
            var fragment = try invite(reader, body, ext: try ext(), dataField: 6)
            if status != 0 { fragment.data = [] }
            return .inviteResponse(fragment, status: status, reason: reason)
        }
    }

    private static func invite(_ reader: FlatBufferReader, _ body: FlatBufferReader.Table, ext: String?, dataField: Int)
        throws -> Fragment
    {
        let bundle = try reader.string(2, of: body)
        if let bundle, bundle.utf8.count > CarrierLimits.maxBundle {
            throw DecodeError.refused("a bundle of \(bundle.utf8.count) bytes, at most \(CarrierLimits.maxBundle)")
        }
        return Fragment(
            ext: ext, tid: Int64(bitPattern: try reader.u64(1, of: body) ?? 0),
            totalSize: try reader.u32(3, of: body) ?? 0,
            bundle: bundle, data: Array(try reader.bytes(dataField, of: body) ?? []))
    }
}
