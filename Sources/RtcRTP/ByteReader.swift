/// Big-endian reads over a byte buffer with bounds checks: every read of
/// network input goes through here, so a short packet is an error, never a trap.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var offset: Int

    init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    mutating func u8() throws(RtpError) -> UInt8 {
        guard remaining >= 1 else { throw .truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() throws(RtpError) -> UInt16 {
        guard remaining >= 2 else { throw .truncated }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func u24() throws(RtpError) -> UInt32 {
        guard remaining >= 3 else { throw .truncated }
        defer { offset += 3 }
        return UInt32(bytes[offset]) << 16 | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2])
    }

    mutating func u32() throws(RtpError) -> UInt32 {
        guard remaining >= 4 else { throw .truncated }
        defer { offset += 4 }
        return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u64() throws(RtpError) -> UInt64 {
        UInt64(try u32()) << 32 | UInt64(try u32())
    }

    mutating func take(_ count: Int) throws(RtpError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw .truncated }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func skip(_ count: Int) throws(RtpError) {
        guard count >= 0, remaining >= count else { throw .truncated }
        offset += count
    }
}

extension Array where Element == UInt8 {
    mutating func appendU16(_ value: UInt16) {
        append(UInt8(value >> 8))
        append(UInt8(value & 0xFF))
    }

    mutating func appendU24(_ value: UInt32) {
        append(UInt8((value >> 16) & 0xFF))
        append(UInt8((value >> 8) & 0xFF))
        append(UInt8(value & 0xFF))
    }

    mutating func appendU32(_ value: UInt32) {
        appendU16(UInt16(value >> 16))
        appendU16(UInt16(value & 0xFFFF))
    }

    mutating func appendU64(_ value: UInt64) {
        appendU32(UInt32(value >> 32))
        appendU32(UInt32(value & 0xFFFF_FFFF))
    }
}

/// Why an RTP or RTCP packet was refused.
public enum RtpError: Error, Equatable, Sendable {
    case truncated
    case badVersion(UInt8)
    case badPadding
    case badLength
    case badHeaderExtension
    case tooManyCsrcs
}
