/// How late frames are decoded after the sender captured them: each decoded
/// frame's delay, from its RTP timestamp mapped to the sender's wall clock by
/// its last sender report (RFC 3550 §6.4.1), to the moment it was decoded.
/// Meaningful when both clocks agree: the same machine, or clocks kept in
/// step by NTP. Keeps the last `capacity` delays; pure.
public struct LatencyMeter: Sendable, Equatable {
    /// Delays kept: the latest ones.
    public static let capacity = 256
    private var samples: [Double] = []
    private var next = 0

    /// A meter with no delays yet.
    public init() {}

    /// One frame's delay, seconds. A delay outside ±10 s is a clock that
    /// jumped or a report that does not belong, not a delay: dropped.
    public mutating func note(_ seconds: Double) {
        guard seconds.isFinite, abs(seconds) < 10 else { return }
        if samples.count < Self.capacity {
            samples.append(seconds)
        } else {
            samples[next] = seconds
            next = (next + 1) % Self.capacity
        }
    }

    /// The median and 95th percentile of the recent delays, seconds; nil before any.
    public var median: Double? { percentile(0.5) }
    /// (See `median`.)
    public var p95: Double? { percentile(0.95) }

    private func percentile(_ fraction: Double) -> Double? {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction + 0.5))]
    }
}
