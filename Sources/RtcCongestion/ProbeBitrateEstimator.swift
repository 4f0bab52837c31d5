/// Reads what a probe burst says about the path (libwebrtc's
/// ProbeBitrateEstimator): the rate it was sent at and the rate it arrived at;
/// when it arrived slower, the path carries about what arrived.
struct ProbeBitrateEstimator {
    private struct Cluster {
        var firstSend = Int64.max
        var lastSend = Int64.min
        var firstArrival = Int64.max
        var lastArrival = Int64.min
        var sentBytes = 0
        var lastSentSize = 0
        var receivedBytes = 0
        var firstReceivedSize = 0
        var received = 0
        var reported = 0
        var done = false
    }

    private var clusters: [Int: Cluster] = [:]
    /// Bursts older than this are dropped unfinished (µs).
    static let horizon: Int64 = 5_000_000

    /// Feeds one reported probe packet; returns the path's rate once its burst has been reported well enough.
    mutating func add(_ result: PacketResult, expected: Int) -> Double? {
        guard let id = result.sent.probeCluster else { return nil }
        var cluster = clusters[id] ?? Cluster()
        guard !cluster.done else { return nil }
        cluster.reported += 1
        let sent = result.sent
        if sent.sendTime < cluster.firstSend { cluster.firstSend = sent.sendTime }
        if sent.sendTime >= cluster.lastSend { (cluster.lastSend, cluster.lastSentSize) = (sent.sendTime, sent.size) }
        cluster.sentBytes += sent.size
        if let arrival = result.arrival {
            cluster.received += 1
            cluster.receivedBytes += sent.size
            if arrival < cluster.firstArrival {
                (cluster.firstArrival, cluster.firstReceivedSize) = (arrival, sent.size)
            }
            cluster.lastArrival = max(cluster.lastArrival, arrival)
        }
        clusters = clusters.filter { $0.value.firstSend > sent.sendTime - Self.horizon || $0.key == id }
        // Wait until most of the burst is reported: 80% of what was sent.
        guard cluster.reported * 5 >= expected * 4, cluster.received >= 4 else {
            clusters[id] = cluster
            return nil
        }
        cluster.done = true
        clusters[id] = cluster
        let sendSpan = cluster.lastSend - cluster.firstSend
        let arrivalSpan = cluster.lastArrival - cluster.firstArrival
        guard sendSpan > 0, arrivalSpan > 0 else { return nil }
        // The last packet sent and the first received only mark the ends of the spans.
        let sendRate = Double((cluster.sentBytes - cluster.lastSentSize) * 8) * 1_000_000 / Double(sendSpan)
        let arrivalRate =
            Double((cluster.receivedBytes - cluster.firstReceivedSize) * 8) * 1_000_000 / Double(arrivalSpan)
        guard arrivalRate < 2 * sendRate else { return nil }  // compressed on the way: not a measurement
        return arrivalRate < 0.9 * sendRate ? 0.95 * arrivalRate : min(sendRate, arrivalRate)
    }
}
