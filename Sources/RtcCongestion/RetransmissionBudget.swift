/// Which packets a NACK may have again, so that repairs never flood the link
/// they are meant to repair (libwebrtc's retransmission rate limiter, and its
/// rule of one retransmission of a packet per round trip). Pure: the packet,
/// its size, the time, the target and the round-trip time come in, a yes or
/// a no comes out.
///
/// Retransmissions in any one second add up to at most the target rate: when
/// a 2 Mbit/s link fell to 300 kbit/s, every NACK was answered at once and
/// the sender put 3 Mbit/s on the wire in that second (75% lost), repairs of
/// repairs included. And a packet already resent less than a round trip ago
/// is not sent again: the receiver asks again before the first repair could
/// have reached it (RFC 4585 §3.2 leaves the pace of repairs to the sender).
public struct RetransmissionBudget: Sendable {
    /// The window the target rate is counted over, µs.
    public static let window: Int64 = 1_000_000
    /// The shortest wait before the same packet goes again, µs, whatever the
    /// round trip (a loopback's is near 0).
    public static let shortestWait: Int64 = 5_000
    /// The wait before the same packet goes again while no round trip is known, µs.
    public static let unknownRoundTrip: Int64 = 100_000

    /// (time µs, bytes, packet) of each retransmission in the window, oldest first.
    private var sent: [(time: Int64, bytes: Int, key: UInt64)] = []
    private var sentBytes = 0
    /// When each packet (stream, sequence number) was last resent, within the window.
    private var lastResent: [UInt64: Int64] = [:]

    /// A budget with nothing resent yet.
    public init() {}

    /// Whether the packet (`bytes` on the wire) may go again now; if so it is counted.
    /// `target`: bit/s, nil without congestion control (no rate limit);
    /// `roundTrip`: µs, nil before one is known.
    public mutating func allow(
        ssrc: UInt32, sequence: UInt16, bytes: Int, at now: Int64, target: Double?, roundTrip: Int64?
    ) -> Bool {
        forget(before: now - Self.window)
        let key = UInt64(ssrc) << 16 | UInt64(sequence)
        let wait = max(roundTrip ?? Self.unknownRoundTrip, Self.shortestWait)
        if let last = lastResent[key], now - last < wait { return false }
        if let target, Double(sentBytes + bytes) * 8 > target * Double(Self.window) / 1_000_000 { return false }
        sent.append((now, bytes, key))
        sentBytes += bytes
        lastResent[key] = now
        return true
    }

    /// What retransmissions took over the last window, bit/s: the repair
    /// overhead that comes out of the video encoder's share, as libwebrtc
    /// takes its measured NACK rate out of the encoder's target (otherwise
    /// media and repairs together ask up to twice the target of the link).
    public mutating func rate(at now: Int64) -> Double {
        forget(before: now - Self.window)
        return Double(sentBytes * 8) * 1_000_000 / Double(Self.window)
    }

    private mutating func forget(before cutoff: Int64) {
        let expired = sent.prefix { $0.time < cutoff }
        guard !expired.isEmpty else { return }
        for record in expired {
            sentBytes -= record.bytes
            // Forgotten only if this was the packet's latest resend.
            if lastResent[record.key] == record.time { lastResent[record.key] = nil }
        }
        sent.removeFirst(expired.count)
    }
}
