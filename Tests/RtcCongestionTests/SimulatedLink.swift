/// A bottleneck on virtual time: a drop-tail queue of at most `queueLimit` µs
/// in front of a link of `capacity(t)` bit/s, then `delay` µs of propagation,
/// with random loss before the queue. Packets leave in order (a fluid FIFO).
struct SimulatedLink {
    var capacity: (Int64) -> Double
    var delay: Int64
    var queueLimit: Int64 = 200_000
    var loss = 0.0
    var random = SeededRandom(seed: 7)
    private var busyUntil: Int64 = 0
    private(set) var dropped = 0
    private(set) var carried = 0

    init(capacity: @escaping (Int64) -> Double, delay: Int64, queueLimit: Int64 = 200_000, loss: Double = 0) {
        self.capacity = capacity
        self.delay = delay
        self.queueLimit = queueLimit
        self.loss = loss
    }

    /// How long a packet sent now would wait in the queue, µs.
    func queueDelay(at now: Int64) -> Int64 { max(busyUntil - now, 0) }

    /// When the packet arrives, or nil if the link dropped it.
    mutating func send(size: Int, at now: Int64) -> Int64? {
        if loss > 0, random.nextUnit() < loss {
            dropped += 1
            return nil
        }
        let start = max(now, busyUntil)
        guard start - now <= queueLimit else {
            dropped += 1
            return nil
        }
        busyUntil = start + Int64(Double(size * 8) / capacity(start) * 1_000_000)
        carried += 1
        return busyUntil + delay
    }
}

/// A small deterministic generator (SplitMix64), so every run of a scenario is the same.
struct SeededRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
