/// The field layer under our extra packets and Express's sealed headers: a type byte, then
/// `tag(u8) length(u16 BE) value` fields. Unknown tags are skipped so newer
/// peers can add fields; a repeated tag or a length past the end is an error.
struct WireWriter {
    private(set) var bytes: [UInt8]

    init(type: UInt8) { bytes = [type] }

    mutating func add(_ tag: WireTag, _ value: some Collection<UInt8>) {
        precondition(value.count <= Int(UInt16.max))
        bytes.append(tag.rawValue)
        bytes.append(UInt8(value.count >> 8))
        bytes.append(UInt8(value.count & 0xFF))
        bytes.append(contentsOf: value)
    }

    mutating func add(_ tag: WireTag, string: String?) {
        if let string { add(tag, Array(string.utf8)) }
    }

    mutating func add<T: FixedWidthInteger>(_ tag: WireTag, integer: T) {
        add(tag, withUnsafeBytes(of: integer.bigEndian) { Array($0) })
    }
}

enum WireTag: UInt8 {
    case ext = 1
    case data = 2
    case transferId = 3
    case offset = 4
    case total = 5
    case status = 6
    case reason = 7
    case messageId = 8
    case fileId = 9
    case name = 10
    case description = 11
    case gender = 12
    case phone = 13
    case email = 14
    case region = 15
    case hasAvatar = 16
    case protoVersion = 20
    case platform = 21
    case osVersion = 22
    case appVersion = 23
    case avatarUrl = 30
    case url = 31
    case ens = 32
    case extra = 33
    case hello = 40
    case timestamp = 50
    case nospam = 51
    case dhtKey = 60
    case port = 61
    case features = 70
}

struct WireReader {
    let type: UInt8
    private var fields: [UInt8: ArraySlice<UInt8>] = [:]

    init(_ bytes: some Collection<UInt8>) throws(PacketError) {
        let bytes = Array(bytes)
        guard let type = bytes.first else { throw .empty }
        self.type = type
        var index = 1
        while index < bytes.count {
            guard index + 3 <= bytes.count else { throw .truncated }
            let tag = bytes[index]
            let length = Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
            index += 3
            guard index + length <= bytes.count else { throw .truncated }
            guard fields[tag] == nil else { throw .duplicateField(tag) }
            fields[tag] = bytes[index..<index + length]
            index += length
        }
    }

    func bytes(_ tag: WireTag) -> ArraySlice<UInt8>? { fields[tag.rawValue] }

    func require(_ tag: WireTag) throws(PacketError) -> ArraySlice<UInt8> {
        guard let value = fields[tag.rawValue] else { throw .missingField(tag.rawValue) }
        return value
    }

    func string(_ tag: WireTag, max: Int) throws(PacketError) -> String? {
        guard let value = fields[tag.rawValue] else { return nil }
        guard value.count <= max, let text = String(validating: value, as: UTF8.self) else {
            throw .badField(tag.rawValue)
        }
        return text
    }

    func integer<T: FixedWidthInteger>(_ tag: WireTag, as: T.Type = T.self) throws(PacketError) -> T? {
        guard let value = fields[tag.rawValue] else { return nil }
        guard value.count == MemoryLayout<T>.size else { throw .badField(tag.rawValue) }
        return value.reduce(T.zero) { $0 << 8 | T(truncatingIfNeeded: $1) }
    }

    func requireInteger<T: FixedWidthInteger>(_ tag: WireTag, as type: T.Type = T.self) throws(PacketError) -> T {
        guard let value = try integer(tag, as: type) else { throw .missingField(tag.rawValue) }
        return value
    }
}

/// Why a received packet could not be decoded. Such packets are dropped and
/// counted; they never reach the application and never crash the node.
public enum PacketError: Error, Equatable, Sendable {
    case empty
    case truncated
    case unknownType(UInt8)
    case duplicateField(UInt8)
    case missingField(UInt8)
    case badField(UInt8)
    case tooLarge(Int)
}
