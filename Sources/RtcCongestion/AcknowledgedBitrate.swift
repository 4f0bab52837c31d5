/// The rate at which the receiver got our packets: bytes received over the
/// last half second of arrivals. This, not the target, is what an overuse
/// cuts from (the target may be far above what the encoder produced).
struct AcknowledgedBitrate {
    static let window: Int64 = 500_000
    /// Below this much arrival history the rate is not known yet.
    static let minimumSpan: Int64 = 150_000

    private var arrivals: [(time: Int64, size: Int)] = []
    private var head = 0
    private var bytes = 0

    mutating func add(arrival: Int64, size: Int) {
        arrivals.append((arrival, size))
        bytes += size
        while head < arrivals.count, arrivals[head].time < arrival - Self.window {
            bytes -= arrivals[head].size
            head += 1
        }
        if head > 1024 {
            arrivals.removeFirst(head)
            head = 0
        }
    }

    /// bit/s, or nil before enough has arrived.
    var rate: Double? {
        guard let first = arrivals[head...].first, let last = arrivals.last else { return nil }
        let span = max(last.time - first.time, Self.minimumSpan)
        guard last.time - first.time >= Self.minimumSpan / 2 else { return nil }
        return Double(bytes * 8) * 1_000_000 / Double(span)
    }
}
