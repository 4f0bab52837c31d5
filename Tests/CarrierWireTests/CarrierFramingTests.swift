import Foundation
import Testing

@testable import CarrierWire

/// The framing against two captures of real Carrier peers and their
/// bootstrap on 127.0.0.1 (`Fixtures/carrier-ref-udp.pcap`,
/// `carrier-ref-tcp-relay.pcap`, from shared/vectors): every datagram and
/// every TCP relay frame comes off, and goes back on, byte for byte.
@Suite struct CarrierFramingTests {
    /// One TCP or UDP packet of a capture.
    struct Packet {
        var udp: Bool
        var source: String
        var destination: String
        var destinationPort: UInt16
        var sequence: UInt32
        var payload: [UInt8]
    }

    /// The packets of a pcap of Ethernet frames (tcpdump on lo), IPv4 only.
    static func packets(_ name: String) throws -> [Packet] {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "pcap", subdirectory: "Fixtures"))
        let data = [UInt8](try Data(contentsOf: url))
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(data[at + $1]) << (8 * UInt32($1)) } }
        func be16(_ bytes: ArraySlice<UInt8>, _ at: Int) -> UInt16 {
            UInt16(bytes[bytes.startIndex + at]) << 8 | UInt16(bytes[bytes.startIndex + at + 1])
        }
        func be32(_ bytes: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
            (0..<4).reduce(0) { $0 << 8 | UInt32(bytes[bytes.startIndex + at + $1]) }
        }
        try #require(u32(0) == 0xA1B2_C3D4 && u32(20) == 1)
        var packets: [Packet] = []
        var offset = 24
        while offset + 16 <= data.count {
            let length = Int(u32(offset + 8))
            let frame = data[(offset + 16)..<(offset + 16 + length)]
            offset += 16 + length
            let ip = frame.dropFirst(14)
            guard ip.count >= 20, ip[ip.startIndex] >> 4 == 4 else { continue }
            let headerLength = Int(ip[ip.startIndex] & 0x0F) * 4
            let total = Int(be16(ip, 2))
            let proto = ip[ip.startIndex + 9]
            let transport = ip.dropFirst(headerLength).prefix(total - headerLength)
            let source = "\(be32(ip, 12)):\(be16(transport, 0))"
            let destination = "\(be32(ip, 16)):\(be16(transport, 2))"
            if proto == 17 {
                packets.append(
                    Packet(
                        udp: true, source: source, destination: destination, destinationPort: be16(transport, 2),
                        sequence: 0, payload: Array(transport.dropFirst(8))))
            } else if proto == 6 {
                let dataOffset = Int(transport[transport.startIndex + 12] >> 4) * 4
                packets.append(
                    Packet(
                        udp: false, source: source, destination: destination, destinationPort: be16(transport, 2),
                        sequence: be32(transport, 4), payload: Array(transport.dropFirst(dataOffset))))
            }
        }
        return packets
    }

    @Test func everyDatagramOfACarrierPeerCarriesTheMagic() throws {
        let datagrams = try Self.packets("carrier-ref-udp").filter(\.udp)
        #expect(datagrams.count == 926)
        for datagram in datagrams {
            let inner = try #require(CarrierFraming.unwrap(datagram: datagram.payload[...]))
            #expect(CarrierFraming.wrap(datagram: inner) == datagram.payload)
        }
        // A stock toxcore datagram (a DHT ping request starts with 0x00) is dropped.
        #expect(CarrierFraming.unwrap(datagram: [0x00] + [UInt8](repeating: 7, count: 64)) == nil)
        #expect(CarrierFraming.unwrap(datagram: CarrierFraming.magic[...]) == nil)
    }

    /// Each TCP direction of each connection to the relay, as the bytes
    /// arrived: deframed without an error, and framed again to the same bytes.
    @Test func everyTcpRelayStreamDeframesAndFramesBack() throws {
        var checked = 0
        for capture in ["carrier-ref-tcp-relay", "carrier-ref-udp"] {
            var streams: [String: (toRelay: Bool, next: UInt32?, bytes: [UInt8])] = [:]
            for packet in try Self.packets(capture) where !packet.udp && !packet.payload.isEmpty {
                let key = packet.source + ">" + packet.destination
                var stream = streams[key] ?? (packet.destinationPort == 43445, nil, [])
                // Loopback loses nothing; a retransmission repeats bytes already taken.
                if let next = stream.next, packet.sequence != next { continue }
                stream.bytes += packet.payload
                stream.next = packet.sequence &+ UInt32(packet.payload.count)
                streams[key] = stream
            }
            for (key, stream) in streams {
                let handshake = stream.toRelay ? CarrierFraming.clientHandshake : CarrierFraming.serverHandshake
                var deframer = CarrierFraming.StreamDeframer(handshake: handshake)
                // Cut into pieces of awkward sizes, as reads would.
                var inner: [UInt8] = []
                var index = 0
                var size = 1
                while index < stream.bytes.count {
                    let end = min(index + size, stream.bytes.count)
                    inner += try deframer.deframe(stream.bytes[index..<end])
                    index = end
                    size = size % 37 + 3
                }
                #expect(inner.count < stream.bytes.count || stream.bytes.count <= handshake, "\(capture) \(key)")
                var framer = CarrierFraming.StreamFramer(handshake: handshake)
                var wire: [UInt8] = []
                for start in stride(from: 0, to: inner.count, by: 5) {
                    wire += framer.frame(inner[start..<min(start + 5, inner.count)])
                }
                #expect(wire == stream.bytes, "\(capture) \(key)")
                checked += 1
            }
        }
        #expect(checked >= 4)
    }

    /// A stream from stock toxcore (no magic after the handshake) is refused, and stays so.
    @Test func aStreamWithoutTheMagicIsRefused() {
        var deframer = CarrierFraming.StreamDeframer(handshake: 2)
        #expect((try? deframer.deframe([1, 2])) == [1, 2])
        #expect(throws: CarrierFraming.StreamDeframer.Failure.self) { try deframer.deframe([0x00, 0x10, 9, 9]) }
        #expect(throws: CarrierFraming.StreamDeframer.Failure.self) { try deframer.deframe(CarrierFraming.magic) }
    }
}
