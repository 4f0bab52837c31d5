import RtcRTP

/// The send-side bandwidth estimator (draft-ietf-rmcat-gcc-02, after
/// libwebrtc's GoogCC): a pure state machine. Packets sent and transport-wide
/// feedback go in, with the time; a target bitrate and probe requests come out.
/// No clock and no socket inside, so a whole call over a simulated link runs
/// in milliseconds (Tests/RtcCongestionTests).
///
/// Times are µs on the caller's monotonic clock; rates are bit/s.
public struct SendSideEstimator: Sendable {
    /// The rates the estimate starts at and stays between, bit/s.
    public struct Configuration: Sendable {
        /// Where the estimate starts (libwebrtc: 300 kbit/s).
        public var start: Double
        /// It never goes below this.
        public var minimum: Double
        /// Nor above this.
        public var maximum: Double

        /// Rates in bit/s.
        public init(start: Double = 300_000, minimum: Double = 30_000, maximum: Double = 2_500_000) {
            self.start = start
            self.minimum = minimum
            self.maximum = maximum
        }
    }

    /// Everything the estimator knows, for stats and plots.
    public struct Snapshot: Equatable, Sendable {
        /// What the senders should aim at: the lowest of the two controllers and the receiver's cap.
        public var target: Double
        /// The delay-based controller's rate.
        public var delayBased: Double
        /// The loss-based controller's rate.
        public var lossBased: Double
        /// What the receiver acknowledged over the last half second, if known.
        public var acknowledged: Double?
        /// The delay detector's last verdict.
        public var usage: BandwidthUsage
        /// Round trip from feedback: send to feedback received, µs.
        public var rtt: Int64
        /// Loss in the last report, 0-1.
        public var loss: Double
        /// The sender used less than two thirds of the target: it, not the path, limits the rate.
        public var applicationLimited: Bool
        /// A cap the receiver asked for with REMB, if any.
        public var receiverCap: Double?
        /// What we sent over the last half second, bit/s (counted as the estimator counts packets), if known.
        public var sent: Double?
    }

    /// The rates it was made with.
    public let configuration: Configuration
    private var history = SentPacketHistory()
    private var groups = InterArrivalGroups()
    private var trendline = TrendlineEstimator()
    private var aimd: AimdRateControl
    private var lossControl: LossBasedControl
    private var acknowledged = AcknowledgedBitrate()
    private var probes: ProbeController
    private var probeResults = ProbeBitrateEstimator()
    private var probeSent: [Int: Int] = [:]
    /// The burst on the wire: when it started and when its last packet is due (µs).
    private var burst: (cluster: Int, from: Int64, until: Int64)?
    private var sentRate = AcknowledgedBitrate()
    private var rtt: Int64?
    private var receiverCap: Double?
    private var usage = BandwidthUsage.normal
    /// When the delay detector last said overuse (µs), or loss was high.
    private var lastCongested: Int64?
    /// No probe within this long of overuse or high loss: a queue that is
    /// growing already says the path is full, and a burst into it only
    /// overfills it (seen on a 400 kbit/s uplink shared with the node's own
    /// traffic, where start probes lost a quarter of the packets for seconds).
    static let probeQuiet: Int64 = 1_000_000

    /// An estimator at its start rate, with the two start probes due.
    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
        aimd = AimdRateControl(
            start: configuration.start, minimum: configuration.minimum, maximum: configuration.maximum)
        lossControl = LossBasedControl(start: configuration.start)
        probes = ProbeController(start: configuration.start, maximum: configuration.maximum)
    }

    /// The rate the encoders and the pacer should aim at.
    public var target: Double {
        min(
            max(min(aimd.rate, lossControl.rate, receiverCap ?? .infinity), configuration.minimum),
            configuration.maximum)
    }

    /// Everything it knows now.
    public var snapshot: Snapshot {
        let sent = sentRate.rate
        return Snapshot(
            target: target, delayBased: aimd.rate, lossBased: lossControl.rate, acknowledged: acknowledged.rate,
            usage: usage, rtt: rtt ?? 0, loss: lossControl.lastLoss,
            applicationLimited: sent.map { $0 < target * 0.65 } ?? true, receiverCap: receiverCap, sent: sent)
    }

    /// Numbers a packet about to leave; put `UInt16(truncatingIfNeeded: sequence)` in its
    /// transport-wide sequence number extension. A packet sent while a burst
    /// is on the wire (`probeStarted`) counts in it, whatever it carries.
    public mutating func packetSent(size: Int, at now: Int64, probeCluster: Int? = nil) -> SentPacket {
        let probeCluster = probeCluster ?? burst.flatMap { $0.from...$0.until ~= now ? $0.cluster : nil }
        if let probeCluster { probeSent[probeCluster, default: 0] += 1 }
        sentRate.add(arrival: now, size: size)
        return history.add(size: size, at: now, probeCluster: probeCluster)
    }

    /// A burst of `cluster` goes out from `now` for `duration` µs: media sent
    /// meanwhile is part of it, as libwebrtc's pacer counts it, so the burst
    /// measures what the path carries for this call, not what is left beside
    /// its media. Without that, a recovery probe at 2.1 Mbit/s beside
    /// several hundred kbit/s of video arrived at less than 80% of its rate
    /// on a 2 Mbit/s link, the link did not count as back, and the target
    /// stayed at 1.4 Mbit/s for the 5 s the relay test watches.
    public mutating func probeStarted(cluster: Int, at now: Int64, duration: Int64) {
        burst = (cluster, now, now + max(duration, 0))
    }

    /// The next probe burst the pacer should send, if one is due.
    public mutating func nextProbe(at now: Int64) -> ProbeCluster? {
        probes.track(target: target, at: now)
        if let lastCongested, now - lastCongested < Self.probeQuiet { return nil }  // kept for later
        return probes.next()
    }

    /// A REMB from the receiver: never aim above it.
    public mutating func receiverEstimate(_ bitrate: Double) {
        receiverCap = bitrate > 0 ? bitrate : nil
    }

    /// Transport-wide feedback arrived at `now`.
    public mutating func feedback(_ feedback: TransportFeedback, at now: Int64) {
        let results = history.results(for: feedback)
        guard !results.isEmpty else { return }
        var received = 0
        var newestAcked: SentPacket?
        var sawOveruse = false
        for result in results {
            guard let arrival = result.arrival else { continue }
            received += 1
            acknowledged.add(arrival: arrival, size: result.sent.size)
            if result.sent.sequence > newestAcked?.sequence ?? -1 { newestAcked = result.sent }
            if let deltas = groups.add(sendTime: result.sent.sendTime, arrival: arrival) {
                let state = trendline.update(
                    arrivalDelta: Double(deltas.arrival) / 1000, sendDelta: Double(deltas.send) / 1000,
                    arrivalTime: Double(deltas.arrivalTime) / 1000)
                if state == .overusing { sawOveruse = true }
            }
            if let cluster = result.sent.probeCluster,
                let probed = probeResults.add(result, expected: probeSent[cluster] ?? 0)
            {
                probeSent[cluster] = nil
                let counts = probes.measured(cluster: cluster, rate: probed)
                // A probe only ever raises the estimate; a failed one says nothing new.
                if counts, probed > aimd.rate {
                    aimd.set(rate: probed, at: now)
                    lossControl.set(rate: max(lossControl.rate, probed), at: now)
                }
            }
        }
        if let newestAcked {
            let sample = now - newestAcked.sendTime
            rtt = rtt.map { ($0 * 7 + sample) / 8 } ?? sample
            aimd.rtt = rtt ?? aimd.rtt
        }
        usage = sawOveruse ? .overusing : trendline.state
        if usage == .overusing || lossControl.lastLoss > LossBasedControl.highLoss { lastCongested = now }
        aimd.update(usage, throughput: acknowledged.rate, at: now)
        lossControl.add(
            received: received, lost: results.count - received, at: now, rtt: rtt ?? 200_000, ceiling: aimd.rate)
    }
}
