/// What the package's fuzzer (`Sources/FuzzTargets`) feeds to the node's
/// parsers of bytes from the network. `package`: not part of the public API.
package enum NodeFuzzEntry {
    /// One node packet, as a friend's lossless packet, friend request or status message brings it.
    package static func packet(_ bytes: [UInt8]) {
        _ = try? WirePacket.decode(bytes)
    }

    /// A run of packets from one friend through the fragment reassembly of bulk
    /// messages and invites (with its 5 MB and 8 KB limits).
    package static func reassembly(_ bytes: [UInt8]) {
        var assembler = FragmentAssembler<Int>(limits: .init(maxTotal: 64 * 1024, timeout: .seconds(60)))
        let start = ContinuousClock.now
        var index = 0
        var step = 0
        // Length-prefixed packets: u16 length, then the packet.
        while index + 2 <= bytes.count {
            let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            index += 2
            let end = min(bytes.count, index + length)
            if case .bulk(let fragment)? = try? WirePacket.decode(bytes[index..<end]) {
                _ = assembler.add(fragment, from: Int(bytes[index] & 3), now: start + .seconds(step))
            }
            index = end
            step += 1
        }
        _ = assembler.expire(now: start + .seconds(step + 61))
    }

    /// An Express pull answer and the sealed messages in it.
    package static func express(_ bytes: [UInt8]) {
        guard let records = ExpressProtocol.Record.decodeAll(bytes) else { return }
        let key = [UInt8](repeating: 7, count: 32)
        for record in records { _ = SealedMessage.open(record.sealed, from: record.sender, recipientSecretKey: key) }
    }
}
