/// Keeps the last packets sent on each SSRC so a NACK can be answered
/// (RFC 4585 §6.2.1). Bounded: `capacity` packets per SSRC, older ones are
/// overwritten, and a NACK for one of them gets nothing.
public struct RetransmissionCache: Sendable {
    /// Packets kept per SSRC.
    public let capacity: Int
    private var slots: [UInt32: [RtpPacket?]] = [:]

    /// An empty cache keeping `capacity` packets per SSRC (at least one).
    public init(capacity: Int = 512) { self.capacity = max(capacity, 1) }

    /// Keeps a packet just sent, in place of the one `capacity` packets before it.
    public mutating func store(_ packet: RtpPacket) {
        // Mutated in place through the defaulted subscript: copying the ring out
        // and back made every packet sent copy `capacity` packets.
        slots[packet.ssrc, default: [RtpPacket?](repeating: nil, count: capacity)][
            Int(packet.sequenceNumber) % capacity] = packet
    }

    /// The cached packets among `sequences`, in the order asked, skipping what is gone.
    public func packets(ssrc: UInt32, sequences: [UInt16]) -> [RtpPacket] {
        guard let ring = slots[ssrc] else { return [] }
        return sequences.compactMap { sequence in
            guard let packet = ring[Int(sequence) % capacity], packet.sequenceNumber == sequence else { return nil }
            return packet
        }
    }

    /// Drops what is kept for an SSRC that no longer sends.
    public mutating func forget(ssrc: UInt32) { slots[ssrc] = nil }
}
