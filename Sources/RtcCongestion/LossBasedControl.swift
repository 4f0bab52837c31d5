/// The loss-based controller (draft-ietf-rmcat-gcc-02 §6; libwebrtc's
/// SendSideBandwidthEstimation): under 2% loss it grows 8% over the lowest rate
/// of the last second, over 10% it cuts by half the loss, at most once per
/// round trip plus 300 ms; in between it holds. Loss is counted over at least
/// 20 packets and half a second, so one unlucky feedback does not steer it.
struct LossBasedControl {
    static let lowLoss = 0.02
    static let highLoss = 0.10
    static let reportPackets = 20
    static let reportSpan: Int64 = 500_000

    private(set) var rate: Double
    private(set) var lastLoss = 0.0
    private var history: [(time: Int64, rate: Double)] = []
    private var lastDecrease: Int64?
    private var lost = 0
    private var total = 0
    private var countingSince: Int64?

    init(start: Double) { rate = start }

    /// Counts feedback; once enough has been counted, makes a loss report and moves the rate.
    mutating func add(received: Int, lost newlyLost: Int, at now: Int64, rtt: Int64, ceiling: Double) {
        total += received + newlyLost
        lost += newlyLost
        let since = countingSince ?? now
        countingSince = since
        guard total >= Self.reportPackets, now - since >= Self.reportSpan else { return }
        lastLoss = Double(lost) / Double(total)
        (lost, total, countingSince) = (0, 0, now)
        history.removeAll { $0.time < now - 1_000_000 }
        if lastLoss < Self.lowLoss {
            let lowest = history.map(\.rate).min() ?? rate
            rate = max(rate, lowest * 1.08 + 1000)
        } else if lastLoss > Self.highLoss, now - (lastDecrease ?? .min / 2) >= 300_000 + rtt {
            rate *= 1 - lastLoss / 2
            lastDecrease = now
        }
        rate = min(rate, ceiling)
        history.append((now, rate))
    }

    /// A probe or a delay-based cut sets where this controller stands.
    mutating func set(rate newRate: Double, at now: Int64) {
        rate = newRate
        history = [(now, newRate)]
    }

}
