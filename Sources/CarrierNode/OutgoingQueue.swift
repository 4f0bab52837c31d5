import CarrierWire

/// Packets waiting for room in toxcore's send window, per friend. toxcore
/// refuses a packet when its congestion window is full (`SENDQ`); the node
/// keeps the rest here and retries every loop iteration. Bounded in bytes.
/// Control packets (invites and their replies: call signaling) go ahead of
/// queued message pieces, so that a hang-up does not wait behind a 5 MB
/// message (it did, for seconds). Each lane keeps its own order, and the
/// receiver reassembles transfers independently.
struct OutgoingQueue {
    struct Packet {
        /// A Carrier packet goes as a toxcore friend message; our extras
        /// as a lossless custom packet (`ExtraPacket`).
        enum Route { case friendMessage, customPacket }

        var route: Route
        /// The friend message, or the lossless packet: id byte, then the extra packet.
        var bytes: [UInt8]
        /// Set on the last piece of a message: toxcore's read receipt for it is the message's.
        var receipt: MessageId?

        init(_ packet: CarrierPacket, receipt: MessageId? = nil) {
            route = .friendMessage
            bytes = packet.encode()
            self.receipt = receipt
        }

        init(_ packet: ExtraPacket) {
            route = .customPacket
            bytes = [ToxEventBuffer.packetId] + packet.encode()
        }
    }

    /// At most this many bytes wait per friend (three 5 MB messages and change).
    static let maxBytes = 16 << 20

    private var urgent: [Packet] = []
    private var packets: [Packet] = []
    private var head = 0
    private(set) var byteCount = 0

    var isEmpty: Bool { urgent.isEmpty && head == packets.count }
    var first: Packet? { urgent.first ?? (head < packets.count ? packets[head] : nil) }

    func hasRoom(for bytes: Int) -> Bool { byteCount + bytes <= Self.maxBytes }

    /// Queues a packet; an `urgent` one goes after other urgent ones, before the rest.
    mutating func append(_ packet: Packet, urgent isUrgent: Bool = false) {
        if isUrgent { urgent.append(packet) } else { packets.append(packet) }
        byteCount += packet.bytes.count
    }

    mutating func removeFirst() {
        if !urgent.isEmpty {
            byteCount -= urgent.removeFirst().bytes.count
            return
        }
        guard head < packets.count else { return }
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
        let receipts = (urgent + packets[head...]).compactMap(\.receipt)
        urgent.removeAll()
        packets.removeAll()
        head = 0
        byteCount = 0
        return receipts
    }
}
