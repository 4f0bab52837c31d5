import AsyncExtras
import Foundation

/// How the node has stood on the network since it started: the control
/// socket's `status` and `listen`'s events report it (`Carrier.reachability`).
public struct Reachability: Sendable, Equatable {
    /// On the network now, as toxcore last said.
    public var online: Bool
    /// Seconds off the network now (0 while on it).
    public var offlineSeconds: Double
    /// When the node last went off the network, if it did.
    public var lastOffline: Date?
    /// Times it went off the network after it had joined.
    public var timesOffline: Int
    /// The longest stretch off the network, and all of them together, seconds
    /// (the current one included).
    public var longestOfflineSeconds: Double
    /// All the time off the network after it had joined, seconds.
    public var totalOfflineSeconds: Double
    /// Times it asked its bootstrap nodes again, and started toxcore afresh (`OfflineRecovery`).
    public var rebootstraps: Int
    /// See `rebootstraps`.
    public var restarts: Int
}

/// The node's off-network stretches, kept as they happen. Pure: time is passed in.
struct OfflineRecord: Sendable {
    private var offlineSince: ContinuousClock.Instant?
    private var offlineSinceDate: Date?
    private(set) var times = 0
    private var longest = Duration.zero
    private var total = Duration.zero
    private var joined = false

    /// Starts off the network (joining is not counted as a stretch).
    init(since now: ContinuousClock.Instant = .now) { offlineSince = now }

    /// Returns the stretch that just ended (seconds), when the node comes back after it had joined.
    mutating func connectionChanged(connected: Bool, now: ContinuousClock.Instant, date: Date = Date()) -> Double? {
        if connected {
            defer {
                offlineSince = nil
                joined = true
            }
            guard joined, let since = offlineSince else { return nil }
            let stretch = now - since
            longest = max(longest, stretch)
            total += stretch
            return Self.seconds(stretch)
        }
        guard offlineSince == nil else { return nil }
        offlineSince = now
        offlineSinceDate = date
        if joined { times += 1 }
        return nil
    }

    /// Seconds off the network now (0 while on it).
    func currentSeconds(now: ContinuousClock.Instant) -> Double {
        offlineSince.map { Self.seconds(now - $0) } ?? 0
    }

    func report(now: ContinuousClock.Instant, online: Bool, rebootstraps: Int, restarts: Int) -> Reachability {
        let current = joined ? (offlineSince.map { now - $0 } ?? .zero) : .zero
        return Reachability(
            online: online, offlineSeconds: currentSeconds(now: now), lastOffline: offlineSinceDate,
            timesOffline: times, longestOfflineSeconds: Self.seconds(max(longest, current)),
            totalOfflineSeconds: Self.seconds(total + current), rebootstraps: rebootstraps, restarts: restarts)
    }

    static func seconds(_ duration: Duration) -> Double {
        (duration.inSeconds * 10).rounded() / 10
    }
}
