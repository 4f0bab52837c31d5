import CShim

/// SCTP's CRC32C packet checksum (RFC 9260 §6.8 and appendix A), computed
/// here instead of inside usrsctp.
///
/// Why: Debian's usrsctp computes it with an unoptimised byte table, about
/// half of its CPU on a busy data channel (field notes). With usrsctp's
/// checksum offload on, it neither fills the field on output nor checks it on
/// input; `stamp` and `isValid` do both with the CPU's CRC32C instruction.
/// The wire format does not change.
enum SctpChecksum {
    /// Byte offset of the checksum in the common header (RFC 9260 §3.1).
    static let offset = 8
    /// The common header's size: shorter packets are not SCTP.
    static let headerSize = 12

    /// The checksum of `packet`, computed as if its checksum field were zero.
    static func compute(_ packet: UnsafeRawBufferPointer) -> UInt32 {
        guard packet.count >= headerSize, let base = packet.baseAddress else { return 0 }
        let zero: UInt32 = 0
        var crc = cshim_crc32c_update(0xFFFF_FFFF, base, offset)
        crc = withUnsafeBytes(of: zero) { cshim_crc32c_update(crc, $0.baseAddress, 4) }
        crc = cshim_crc32c_update(crc, base + headerSize, packet.count - headerSize)
        return ~crc
    }

    /// Writes the checksum into an outgoing packet. The CRC's bytes go on the
    /// wire least significant first (appendix A reflects it), as usrsctp
    /// stores it on a little-endian host.
    static func stamp(_ packet: UnsafeMutableRawBufferPointer) {
        guard packet.count >= headerSize else { return }
        packet.storeBytes(
            of: compute(UnsafeRawBufferPointer(packet)).littleEndian, toByteOffset: offset, as: UInt32.self)
    }

    /// Whether an incoming packet's checksum is right.
    static func isValid(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard packet.count >= headerSize else { return false }
        let stored = UInt32(littleEndian: packet.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        return stored == compute(packet)
    }
}
