/// What the delay-based detector concludes about the path (draft-ietf-rmcat-gcc-02 §5.4).
public enum BandwidthUsage: String, Sendable {
    case normal
    /// Queues are growing: we send more than the path carries.
    case overusing
    /// Queues are draining.
    case underusing
}

/// Delay-gradient overuse detection (libwebrtc's TrendlineEstimator): the slope
/// of the smoothed accumulated one-way delay over the last groups, compared
/// with a threshold that adapts so that competing TCP flows do not starve us
/// (draft-ietf-rmcat-gcc-02 §5.3-5.4). Times in milliseconds.
struct TrendlineEstimator {
    static let windowSize = 20
    static let smoothing = 0.9
    static let thresholdGain = 4.0
    static let overuseTime = 10.0
    static let thresholdRaise = 0.0087
    static let thresholdLower = 0.039
    static let maxAdaptOffset = 15.0

    private(set) var state: BandwidthUsage = .normal
    private(set) var threshold = 12.5
    private(set) var trend = 0.0

    private var samples: [(x: Double, y: Double)] = []
    private var firstArrival: Double?
    private var accumulatedDelay = 0.0
    private var smoothedDelay = 0.0
    private var deltaCount = 0
    private var timeOverUsing = -1.0
    private var overuseCount = 0
    private var previousTrend = 0.0
    private var lastThresholdUpdate: Double?

    /// One group delta: how much longer (or shorter) the gap got on the way.
    mutating func update(arrivalDelta: Double, sendDelta: Double, arrivalTime: Double) -> BandwidthUsage {
        deltaCount = min(deltaCount + 1, 1000)
        let first = firstArrival ?? arrivalTime
        firstArrival = first
        accumulatedDelay += arrivalDelta - sendDelta
        smoothedDelay = Self.smoothing * smoothedDelay + (1 - Self.smoothing) * accumulatedDelay
        samples.append((arrivalTime - first, smoothedDelay))
        if samples.count > Self.windowSize { samples.removeFirst() }
        if samples.count == Self.windowSize, let slope = Self.slope(samples) { trend = slope }
        detect(sendDelta: sendDelta, now: arrivalTime)
        return state
    }

    /// Least-squares slope of y over x; nil when all x are equal.
    static func slope(_ points: [(x: Double, y: Double)]) -> Double? {
        let count = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.x } / count
        let meanY = points.reduce(0) { $0 + $1.y } / count
        var numerator = 0.0
        var denominator = 0.0
        for point in points {
            numerator += (point.x - meanX) * (point.y - meanY)
            denominator += (point.x - meanX) * (point.x - meanX)
        }
        return denominator == 0 ? nil : numerator / denominator
    }

    private mutating func detect(sendDelta: Double, now: Double) {
        guard deltaCount >= 2 else { return }
        let modified = Double(min(deltaCount, 60)) * trend * Self.thresholdGain
        if modified > threshold {
            timeOverUsing = timeOverUsing < 0 ? sendDelta / 2 : timeOverUsing + sendDelta
            overuseCount += 1
            // Overuse must last, and the trend must still be rising, before we act on it.
            if timeOverUsing > Self.overuseTime, overuseCount > 1, trend >= previousTrend {
                timeOverUsing = 0
                overuseCount = 0
                state = .overusing
            }
        } else if modified < -threshold {
            timeOverUsing = -1
            overuseCount = 0
            state = .underusing
        } else {
            timeOverUsing = -1
            overuseCount = 0
            state = .normal
        }
        previousTrend = trend
        adaptThreshold(modified, now: now)
    }

    /// The threshold follows the trend's size, fast down and slowly up (§5.4, equation 3),
    /// ignoring spikes far above it.
    private mutating func adaptThreshold(_ modified: Double, now: Double) {
        let last = lastThresholdUpdate ?? now
        lastThresholdUpdate = now
        guard abs(modified) <= threshold + Self.maxAdaptOffset else { return }
        let gain = abs(modified) < threshold ? Self.thresholdLower : Self.thresholdRaise
        let elapsed = min(now - last, 100)
        threshold = min(max(threshold + gain * (abs(modified) - threshold) * elapsed, 6), 600)
    }
}
