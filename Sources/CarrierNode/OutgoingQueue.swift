/// Packets waiting for room in toxcore's send window, per friend. toxcore
/// refuses a packet when its congestion window is full (`SENDQ`); the node
/// keeps the rest here and retries every loop iteration. Bounded in bytes.
struct OutgoingQueue {
    struct Packet {
        /// The lossless packet: id byte, then the encoded node packet.
        var bytes: [UInt8]
        /// Set on the last packet of a message: once it is sent, the receipt's deadline starts.
        var receipt: MessageId?

        init(_ packet: WirePacket, receipt: MessageId? = nil) {
            bytes = [ToxEventBuffer.packetId] + packet.encode()
            self.receipt = receipt
        }
    }

    /// At most this many bytes wait per friend (three 5 MB messages and change).
    static let maxBytes = 16 << 20

    private var packets: [Packet] = []
    private var head = 0
    private(set) var byteCount = 0

    var isEmpty: Bool { head == packets.count }
    var first: Packet? { isEmpty ? nil : packets[head] }

    func hasRoom(for bytes: Int) -> Bool { byteCount + bytes <= Self.maxBytes }

    mutating func append(_ packet: Packet) {
        packets.append(packet)
        byteCount += packet.bytes.count
    }

    mutating func removeFirst() {
        guard !isEmpty else { return }
        byteCount -= packets[head].bytes.count
        head += 1
        if head == packets.count {
            packets.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= packets.count {
            packets.removeFirst(head)
            head = 0
        }
    }

    /// Empties the queue, returning the receipts that will now never come.
    mutating func removeAll() -> [MessageId] {
        let receipts = packets[head...].compactMap(\.receipt)
        packets.removeAll()
        head = 0
        byteCount = 0
        return receipts
    }
}
