import CarrierWire
import Testing

@testable import CarrierNode

/// The per-friend send queue: control packets overtake queued message pieces.
@Suite struct OutgoingQueueTests {
    static func bulk(_ byte: UInt8) -> OutgoingQueue.Packet {
        .init(CarrierPacket.bulk(.init(tid: Int64(byte), totalSize: 1, data: [byte])))
    }

    @Test func controlPacketsGoAheadOfQueuedPiecesInTheirOwnOrder() {
        var queue = OutgoingQueue()
        for byte in UInt8(1)...3 { queue.append(Self.bulk(byte)) }
        queue.append(Self.bulk(10), urgent: true)
        queue.append(Self.bulk(11), urgent: true)
        var order: [[UInt8]] = []
        while let packet = queue.first {
            order.append(packet.bytes)
            queue.removeFirst()
        }
        #expect(order == [10, 11, 1, 2, 3].map { Self.bulk($0).bytes })
        #expect(queue.isEmpty && queue.byteCount == 0)
    }
}
