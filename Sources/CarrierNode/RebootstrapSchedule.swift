/// When a node that is off the network bootstraps again. toxcore asks its
/// bootstrap nodes once, at the start; when every DHT peer it knew has timed
/// out (a network blackout, a laptop that slept, a bootstrap node restarted)
/// it waits to be found, which on a small network may be never. So the node
/// asks its bootstrap nodes again, 10 s after it lost the network (or after
/// it started, if it never joined), then at doubling intervals up to 5
/// minutes, until it is back. Pure: time is passed in.
struct RebootstrapSchedule: Sendable {
    static let firstDelay = Duration.seconds(10)
    static let longestDelay = Duration.seconds(300)

    private var next: ContinuousClock.Instant?
    private var delay = Self.firstDelay

    /// Starts off the network, as a node does.
    init(startedAt now: ContinuousClock.Instant) { next = now + Self.firstDelay }

    /// What toxcore said of our own connection.
    mutating func connectionChanged(connected: Bool, now: ContinuousClock.Instant) {
        delay = Self.firstDelay
        next = connected ? nil : now + Self.firstDelay
    }

    /// Whether to bootstrap again now; if so, the next time is set further off.
    mutating func isDue(now: ContinuousClock.Instant) -> Bool {
        guard let next, now >= next else { return false }
        delay = min(delay * 2, Self.longestDelay)
        self.next = now + delay
        return true
    }

    /// When the next attempt is (nil while connected), for tests and logs.
    var nextAttempt: ContinuousClock.Instant? { next }
}
