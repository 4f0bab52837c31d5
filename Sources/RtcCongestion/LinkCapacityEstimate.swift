/// What the link carried when the last overuses happened: an average with a
/// variance, so the rate controller knows when it is near the link's limit and
/// should creep up instead of growing by a percentage (libwebrtc's
/// LinkCapacityEstimator). Rates in kbit/s.
struct LinkCapacityEstimate {
    private(set) var estimate: Double?
    private var deviation = 0.4

    mutating func onOveruse(throughput kbps: Double) {
        let alpha = 0.05
        let estimate = self.estimate.map { (1 - alpha) * $0 + alpha * kbps } ?? kbps
        let error = estimate - kbps
        deviation = min(max((1 - alpha) * deviation + alpha * error * error / max(estimate, 1), 0.4), 2.5)
        self.estimate = estimate
    }

    mutating func reset() { estimate = nil }

    private var spread: Double { (deviation * (estimate ?? 0)).squareRoot() * 3 }
    var upperBound: Double { estimate.map { $0 + spread } ?? .infinity }
    var lowerBound: Double { estimate.map { max($0 - spread, 0) } ?? 0 }
}
