import CShim
import CUsrsctp
import Testing

@testable import RtcSCTP

/// The CRC32C we compute instead of usrsctp (RFC 9260 appendix A).
struct SctpChecksumTests {
    @Test func crc32cMatchesTheStandardCheckValue() {
        // The CRC-32C check value: the CRC of "123456789" (RFC 3720 appendix B.4 catalogue).
        let text = Array("123456789".utf8)
        #expect(~cshim_crc32c_update(0xFFFF_FFFF, text, text.count) == 0xE306_9283)
        #expect(~cshim_crc32c_update_table(0xFFFF_FFFF, text, text.count) == 0xE306_9283)
    }

    @Test func instructionAndTableAgreeOnEveryLengthAndAlignment() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<1600).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { buffer in
            for start in 0..<9 {
                for length in [0, 1, 7, 8, 9, 15, 16, 63, 100, 1188, 1500] {
                    let slice = UnsafeRawBufferPointer(rebasing: buffer[start..<(start + length)])
                    let fast = cshim_crc32c_update(0x1234_5678, slice.baseAddress, length)
                    let table = cshim_crc32c_update_table(0x1234_5678, slice.baseAddress, length)
                    #expect(fast == table, "start \(start) length \(length)")
                }
            }
        }
    }

    @Test func stampedPacketsCarryWhatUsrsctpWouldHaveWritten() {
        // usrsctp's own checksum routine, over the packet with a zero field, is
        // what it would store there without offload: the wire format is unchanged.
        var generator = SystemRandomNumberGenerator()
        for length in [12, 28, 100, 1200] {
            var packet = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            packet.withUnsafeMutableBytes { SctpChecksum.stamp($0) }
            var zeroed = packet
            zeroed.replaceSubrange(8..<12, with: [0, 0, 0, 0])
            let usrsctps = zeroed.withUnsafeMutableBytes { usrsctp_crc32c($0.baseAddress, $0.count) }
            let stored = packet.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt32.self) }
            #expect(stored == usrsctps)
            #expect(packet.withUnsafeBytes { SctpChecksum.isValid($0) })
            packet[length - 1] ^= 0x01
            #expect(!packet.withUnsafeBytes { SctpChecksum.isValid($0) })
        }
        #expect(![UInt8](repeating: 0, count: 11).withUnsafeBytes { SctpChecksum.isValid($0) })
    }
}
