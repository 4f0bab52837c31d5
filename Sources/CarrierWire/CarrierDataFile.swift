import FileSafety

/// `carrier.data`, the file a Carrier app keeps its identity in (wire notes,
/// `carrier-data.json`), so an identity moves between a Carrier app and this
/// node. Layout, integers big-endian:
/// - a 256-byte header: magic `0x0E0C0D0A`, revision 2, the Tox savedata's
///   length, the extra section's length, the SHA-256 of everything after
///   the header, zeros;
/// - the Tox savedata (`tox_get_savedata`), zero-padded to `paddedSize`;
/// - the extra section, friend labels as `u32 friend number | label | NUL`,
///   zero-padded the same way.
public struct CarrierDataFile: Equatable, Sendable {
    /// What toxcore saves: keys, nospam, friends, profile.
    public var toxSavedata: [UInt8]
    /// Labels the user gave friends, by toxcore friend number.
    public var labels: [Label]

    /// One friend's label.
    public struct Label: Equatable, Sendable {
        /// toxcore's number for the friend.
        public var friendNumber: UInt32
        /// The label.
        public var text: String

        /// A label for a friend number.
        public init(friendNumber: UInt32, text: String) {
            self.friendNumber = friendNumber
            self.text = text
        }
    }

    /// Why bytes are not a `carrier.data`.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case malformed(String)

        /// In words that say which part is wrong.
        public var description: String {
            switch self {
            case .malformed(let why): "not a Carrier data file: \(why)"
            }
        }
    }

    /// The header's first word.
    public static let magic: UInt32 = 0x0E0C_0D0A
    /// The revision the reference writes and this reads.
    public static let revision: UInt32 = 2
    /// Bytes before the Tox savedata.
    public static let headerSize = 256
    /// A file larger than this is not an identity (toxcore saves a few KB a friend).
    public static let maxSize = 64 << 20

    /// The data of an identity and its friends' labels.
    public init(toxSavedata: [UInt8], labels: [Label] = []) {
        self.toxSavedata = toxSavedata
        self.labels = labels
    }

    /// The reference's `ROUND256`: not a plain round-up (0 takes 256 bytes, 200 takes 512).
    public static func paddedSize(_ size: Int) -> Int { (((size + 64) >> 8) + 1) << 8 }

    /// The file's bytes.
    public func encode() -> [UInt8] {
        var extra: [UInt8] = []
        for label in labels { extra += Self.bigEndian(label.friendNumber) + Array(label.text.utf8) + [0] }
        var body = toxSavedata + [UInt8](repeating: 0, count: Self.paddedSize(toxSavedata.count) - toxSavedata.count)
        body += extra + [UInt8](repeating: 0, count: Self.paddedSize(extra.count) - extra.count)
        var header =
            Self.bigEndian(Self.magic) + Self.bigEndian(Self.revision) + Self.bigEndian(UInt32(toxSavedata.count))
            + Self.bigEndian(UInt32(extra.count)) + Sha256.digest(body)
        header += [UInt8](repeating: 0, count: Self.headerSize - header.count)
        return header + body
    }

    /// The identity in `bytes`, checked: magic, revision, lengths within the file, the checksum.
    public static func decode(_ bytes: [UInt8]) throws(Failure) -> CarrierDataFile {
        guard bytes.count >= headerSize, bytes.count <= maxSize else {
            throw .malformed("\(bytes.count) bytes: a header of \(headerSize) and at most \(maxSize) in all")
        }
        guard integer(bytes, 0) == magic else { throw .malformed("its magic is not 0x0E0C0D0A") }
        guard integer(bytes, 4) == revision else { throw .malformed("revision \(integer(bytes, 4)), not 2") }
        let toxLength = Int(integer(bytes, 8))
        let extraLength = Int(integer(bytes, 12))
        guard toxLength <= maxSize, extraLength <= maxSize,
            headerSize + paddedSize(toxLength) + paddedSize(extraLength) == bytes.count
        else { throw .malformed("its lengths (\(toxLength), \(extraLength)) do not fit its \(bytes.count) bytes") }
        guard Array(bytes[16..<48]) == Sha256.digest(Array(bytes[headerSize...])) else {
            throw .malformed("its SHA-256 does not match (damaged or cut)")
        }
        let toxStart = headerSize
        let extraStart = toxStart + paddedSize(toxLength)
        var labels: [Label] = []
        var index = extraStart
        let extraEnd = extraStart + extraLength
        while index < extraEnd {
            guard extraEnd - index >= 5 else { throw .malformed("a label cut short") }
            let number = integer(bytes, index)
            guard let nul = bytes[(index + 4)..<extraEnd].firstIndex(of: 0) else {
                throw .malformed("a label without its NUL")
            }
            labels.append(Label(friendNumber: number, text: String(decoding: bytes[(index + 4)..<nul], as: UTF8.self)))
            index = nul + 1
        }
        return CarrierDataFile(toxSavedata: Array(bytes[toxStart..<toxStart + toxLength]), labels: labels)
    }

    static func integer(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
    }
}
