import CarrierWire

/// What the package's fuzzer (`Sources/FuzzTargets`) feeds to the node's
/// parsers of bytes from the network. `package`: not part of the public API.
package enum NodeFuzzEntry {
    /// One of our extra packets, as a friend's lossless packet brings it
    /// (Carrier packets: the `carrier-packet` target).
    package static func packet(_ bytes: [UInt8]) {
        _ = try? ExtraPacket.decode(bytes)
    }

    /// A run of Carrier packets from four friends through the node's fragment
    /// reassembly of bulk messages, invites and replies.
    package static func reassembly(_ bytes: [UInt8]) {
        var assembler = CarrierReassembler<Int>(maxBufferedBytes: 1 << 20)
        let start = ContinuousClock.now
        var index = 0
        var step = 0
        // Length-prefixed packets: u16 length, then the packet.
        while index + 2 <= bytes.count {
            let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            index += 2
            let end = min(bytes.count, index + length)
            let sender = index < end ? Int(bytes[index] & 3) : 0
            switch try? CarrierPacket.decode(Array(bytes[index..<end])) {
            case .bulk(let fragment)?:
                _ = assembler.take(fragment, kind: .bulk, from: sender, now: start + .seconds(step))
            case .inviteRequest(let fragment)?:
                _ = assembler.take(fragment, kind: .invite, from: sender, now: start + .seconds(step))
            case .inviteResponse(let fragment, _, _)?:
                _ = assembler.take(fragment, kind: .reply, from: sender, now: start + .seconds(step))
            default: break
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
