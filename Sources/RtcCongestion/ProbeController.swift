/// A burst the pacer is asked to send at `rate` so the path's capacity can be
/// measured from how the burst arrives (draft-ietf-rmcat-gcc-02 leaves it open;
/// libwebrtc's ProbeController and str0m's BWE do this).
public struct ProbeCluster: Equatable, Sendable {
    /// Names the cluster: its packets carry it, so their feedback can be told apart.
    public var id: Int
    /// bit/s.
    public var rate: Double
    /// At least this many packets, over at least `duration` µs.
    public var packets: Int
    /// µs.
    public var duration: Int64

    /// How large each probe packet should be: the rate's bytes for the duration
    /// shared among `packets`, between 100 and 1200 bytes, so a probe of a
    /// slow link is a few small packets rather than half a second of queue.
    public var packetSize: Int {
        min(max(Int(rate * Double(duration) / 8_000_000) / packets, 100), 1200)
    }

    /// How many packets of `packetSize` to send at `rate`.
    public var packetCount: Int {
        max(packets, Int(rate * Double(duration) / 8_000_000) / packetSize)
    }
}

/// When to probe: at the start (3x the start rate), so a call does not creep
/// up from its start rate for tens of seconds; and after a large drop, every
/// two seconds for half a minute, so a link that comes back is used again
/// within seconds instead of 8% a second. A recovery probe goes at three
/// times the target, and while the path carries it, the next at twice what
/// arrived, up to 85% of the rate the path carried before the drop. (Each
/// recovery probe at that 85% straight away was 7 KB of burst from a 2
/// Mbit/s peak: 190 ms of a 300 kbit/s link's queue every two seconds, and
/// the picture froze at each.)
///
/// The first recovery probe after a drop counts only once a second burst at
/// the same rate is carried too: a receiving process that stalls for a few
/// tens of milliseconds reads a burst's packets at once and stamps them
/// together, and a burst of 30 ms then seems to arrive at twice the rate
/// the link carries. In the lab, a recovery probe at 624 kbit/s through a
/// 300 kbit/s link was taken that way in 2 calls of 13; the encoders followed
/// it into the link's queue and the picture froze. Two stalls in a row, each
/// in step with a burst, are rare, and the repeat costs a round trip.
///
/// A start probe the path carried (70% of its rate or more arrived) is
/// followed by one at twice what arrived, up to the maximum, as libwebrtc's
/// exponential probing does: a 2 Mbit/s link is found from a 900 kbit/s
/// probe in two more bursts. A recovery probe at 85% of the peak that the
/// path carried (80%: arrival times measured in a busy process jitter) is
/// followed by one at the peak itself, never above: a small burst can slip through a shaper's bucket
/// faster than the link, and chained doubling from it overfilled a 400 kbit/s
/// uplink. (libwebrtc sends 3x and 6x at once; the second only on a link that
/// carried the first spares a slow uplink 3.4 KB of burst on top of the
/// call's first keyframes, which in the network lab's 400 kbit/s case lost a
/// quarter of the packets for two seconds.)
struct ProbeController {
    static let recoveryInterval: Int64 = 2_000_000
    /// The first recovery probe after a drop, as a multiple of the target.
    static let recoveryClimb = 3.0
    /// Recovery probes climb to this share of the peak before the drop.
    static let recoveryShareOfPeak = 0.85
    static let recoveryWindow: Int64 = 30_000_000
    /// A drop below this share of the recent peak counts as large.
    static let largeDrop = 0.66
    static let minimumPackets = 5
    static let minimumDuration: Int64 = 15_000
    /// A recovery probe lasts longer: it decides whether to climb back to the
    /// peak, and arrival times taken in a busy receiving process jitter by a
    /// few milliseconds, a large part of 15 ms.
    static let recoveryDuration: Int64 = 30_000

    /// Why a burst was asked for, which decides what its measurement leads to.
    private enum Kind {
        /// At the start, or after one the path carried: doubles while carried.
        case exponential
        /// The first after a large drop: never taken; sent again when carried.
        case recoveryFirst
        /// After a large drop: back to the peak when carried.
        case recovery
        /// Back at the peak: nothing follows it.
        case backToPeak
    }

    private var pending: [ProbeCluster] = []
    /// The rates of the bursts sent and not yet measured, by id (a few at a time).
    private var asked: [Int: (rate: Double, kind: Kind)] = [:]
    private var nextId = 1
    static let furtherProbeShare = 0.7
    /// The share of a recovery probe the path must carry for the link to count as back.
    static let recoveryCarried = 0.8
    /// A recovery probe that arrived at this many times the target counts too.
    static let farAbove = 2.0
    /// The target when it was last tracked.
    private var current: Double?
    private(set) var peak: (rate: Double, time: Int64)?
    private var dropTime: Int64?
    private var lastRecoveryProbe: Int64?
    let maximum: Double

    init(start: Double, maximum: Double) {
        self.maximum = maximum
        if start * 3 / 2 < maximum { enqueue(rate: min(start * 3, maximum), kind: .exponential) }
    }

    private mutating func enqueue(rate: Double, kind: Kind) {
        pending.append(
            ProbeCluster(
                id: nextId, rate: rate, packets: Self.minimumPackets,
                duration: kind == .recovery || kind == .recoveryFirst ? Self.recoveryDuration : Self.minimumDuration))
        asked[nextId] = (rate, kind)
        asked = asked.filter { $0.key > nextId - 8 }
        nextId += 1
    }

    /// A burst was measured: the path carried `rate`. Probes further when it
    /// carried most of what was asked (see above). Returns whether the
    /// estimate should take the measurement.
    ///
    /// A recovery probe counts only when the path carried 80% of it, or
    /// twice the target it was sent beside: the link is back (the rate
    /// before the drop may have been above what the link carries even
    /// then). A shorter one measured a link someone else now shares
    /// (a second call, a download), where a 30 ms burst slips through the
    /// other flow's gaps at more than this flow's share. Taken as the
    /// estimate, it sent the flow over its share every two seconds, into
    /// overuse and a cut to 85% of what got through: two calls on a
    /// simulated 2 Mbit/s link used 1.3-1.5 Mbit/s between them.
    @discardableResult
    mutating func measured(cluster id: Int, rate: Double) -> Bool {
        guard let wanted = asked.removeValue(forKey: id) else { return true }
        let carried = rate >= wanted.rate * Self.recoveryCarried || rate >= (current ?? .infinity) * Self.farAbove
        let counts =
            switch wanted.kind {
            case .exponential, .backToPeak: true
            case .recoveryFirst: false
            case .recovery: carried
            }
        guard pending.isEmpty else { return counts }
        switch wanted.kind {
        case .recoveryFirst:
            if carried { enqueue(rate: wanted.rate, kind: .recovery) }
        case .exponential:
            guard rate >= wanted.rate * Self.furtherProbeShare else { break }
            let next = min(2 * rate, maximum)
            if next > rate * 1.1 { enqueue(rate: next, kind: .exponential) }
        case .recovery:
            guard carried, let peak, peak.rate > rate * 1.1 else { break }
            let top = recoveryCeiling(peak: peak.rate)
            if wanted.rate < top * 0.99 {
                enqueue(rate: min(2 * rate, top), kind: .recovery)
            } else {
                enqueue(rate: min(peak.rate, maximum), kind: .backToPeak)
            }
        case .backToPeak:
            break
        }
        return counts
    }

    /// Follows the target: notes the peak, and schedules recovery probes after a large drop.
    mutating func track(target: Double, at now: Int64) {
        current = target
        if let peak, now - peak.time > Self.recoveryWindow, dropTime == nil { self.peak = nil }
        if target >= (peak?.rate ?? 0) {
            peak = (target, now)
            dropTime = nil
            return
        }
        guard let peak else { return }
        if target < peak.rate * Self.largeDrop {
            if dropTime == nil { (dropTime, lastRecoveryProbe) = (now, now) }
        } else if target >= peak.rate * 0.8 {
            dropTime = nil  // recovered
        }
        if let dropTime, now - dropTime > Self.recoveryWindow {
            self.peak = nil
            self.dropTime = nil
            return
        }
        if dropTime != nil, let last = lastRecoveryProbe, now - last >= Self.recoveryInterval, pending.isEmpty {
            enqueue(rate: min(recoveryCeiling(peak: peak.rate), target * Self.recoveryClimb), kind: .recoveryFirst)
            lastRecoveryProbe = now
        }
    }

    /// Where recovery probes stop climbing before the one at the peak itself.
    private func recoveryCeiling(peak: Double) -> Double { min(peak * Self.recoveryShareOfPeak, maximum) }

    /// The next burst to send, if one is due.
    mutating func next() -> ProbeCluster? { pending.isEmpty ? nil : pending.removeFirst() }
}
