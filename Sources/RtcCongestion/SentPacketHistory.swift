import RtcRTP

/// A packet as the sender sent it: its place in the transport-wide sequence, when, how large.
public struct SentPacket: Equatable, Sendable {
    /// The transport-wide sequence number, unwrapped.
    public var sequence: Int64
    /// Send time in µs, on the sender's clock.
    public var sendTime: Int64
    /// Bytes on the wire (RTP header and payload).
    public var size: Int
    /// The probe cluster the packet belongs to, if it was sent to probe the path.
    public var probeCluster: Int?

    /// A packet as sent.
    public init(sequence: Int64, sendTime: Int64, size: Int, probeCluster: Int? = nil) {
        self.sequence = sequence
        self.sendTime = sendTime
        self.size = size
        self.probeCluster = probeCluster
    }
}

/// What the receiver said of one sent packet.
public struct PacketResult: Equatable, Sendable {
    /// The packet, as it was sent.
    public var sent: SentPacket
    /// Arrival in µs on the receiver's clock, or nil if it was reported lost.
    public var arrival: Int64?

    /// A packet and its fate.
    public init(sent: SentPacket, arrival: Int64?) {
        self.sent = sent
        self.arrival = arrival
    }
}

/// The packets sent and not yet reported on, so transport-wide feedback can be
/// matched to their send times. It numbers the packets itself, and it is
/// bounded: packets no feedback mentions within `horizon` are forgotten.
struct SentPacketHistory {
    /// How long a packet waits for feedback before it is forgotten (µs).
    static let horizon: Int64 = 10_000_000
    /// Never more than this many packets held, whatever the rate.
    static let capacity = 1 << 15

    private var packets: [Int64: SentPacket] = [:]
    private var oldest: Int64 = 0
    private(set) var nextSequence: Int64 = 0
    /// The receiver's 24-bit reference time wraps every 6.2 days: the last one seen, raw and unwrapped.
    private var lastReference: (raw: Int64, unwrapped: Int64)?

    /// Numbers a packet about to be sent; its low 16 bits go in the header extension.
    mutating func add(size: Int, at time: Int64, probeCluster: Int?) -> SentPacket {
        let packet = SentPacket(sequence: nextSequence, sendTime: time, size: size, probeCluster: probeCluster)
        packets[nextSequence] = packet
        nextSequence += 1
        while oldest < nextSequence,
            packets.count > Self.capacity || (packets[oldest].map { time - $0.sendTime > Self.horizon } ?? true)
        {
            packets[oldest] = nil
            oldest += 1
        }
        return packet
    }

    /// The packets a feedback reports, in sequence order; sequence numbers it
    /// names that were never sent, or were reported already, are skipped.
    mutating func results(for feedback: TransportFeedback) -> [PacketResult] {
        guard nextSequence > 0 else { return [] }
        // The 16-bit base, unwrapped to the sent sequence number nearest to it.
        let base = SequenceNumber.unwrap(feedback.baseSequence, near: nextSequence - 1)
        let reference = unwrapReference(Int64(feedback.referenceTime)) * 64_000
        var results: [PacketResult] = []
        results.reserveCapacity(feedback.arrivals.count)
        for (index, arrival) in feedback.arrivals.enumerated() {
            let sequence = base + Int64(index)
            guard let packet = packets.removeValue(forKey: sequence) else { continue }
            results.append(PacketResult(sent: packet, arrival: arrival.map { reference + $0 }))
        }
        return results
    }

    private mutating func unwrapReference(_ raw: Int64) -> Int64 {
        guard let last = lastReference else {
            lastReference = (raw, raw)
            return raw
        }
        // The step from the last reference, taken the short way round the 24-bit circle.
        var step = (raw - last.raw) & 0xFF_FFFF
        if step >= 0x80_0000 { step -= 0x100_0000 }
        let unwrapped = last.unwrapped + step
        lastReference = (raw, unwrapped)
        return unwrapped
    }
}
