/// What a node off the network does to get back on, and when. Pure: time is
/// passed in.
///
/// toxcore asks its bootstrap nodes once, at the start; when every DHT peer it
/// knew has timed out (a network blackout, a laptop that slept, a bootstrap
/// node that stopped for a while) it waits to be found, which on a small
/// network may be never. So the node asks its bootstrap nodes again 10 s after
/// it lost the network (or after it started, if it never joined), then every
/// 15 s while it stays off: a bootstrap node that comes back after an outage
/// of any length finds the node back on within 30 s (a question is one small
/// packet per bootstrap node; toxcore keeps a TCP relay it already has).
///
/// That is not always enough. On a small private network whose peers come and
/// go (a bot called by a new process each time, each with a new DHT key and
/// port), toxcore's onion keeps building its paths from the dead peers it
/// learned: it stops counting itself announced, and new callers cannot find it
/// (seen after 15 to 40 such calls; asking the bootstrap nodes again did not
/// bring it back in 15 minutes). A fresh toxcore instance from the saved state
/// (the same identity and friends; new DHT key, ports and peer lists) is back
/// on within seconds. So a node still off the network 20 s after it lost it
/// (or started; one re-bootstrap later) starts toxcore afresh, and again at
/// doubling intervals up to every 10 minutes while it stays off.
///
/// Not while a friend's link says otherwise. toxcore counts itself off the
/// network when too few of the nodes it announces itself to hold its
/// announcement, and it rebuilds its onion paths every 20 minutes: on that
/// small network, from a peer list that is mostly departed callers, it has
/// counted itself off for 10-25 s while callers went on reaching it (an
/// hour's soak: every call connected, but a restart at 21 s dropped every
/// friend's link, queued packets and file transfers with it). So a restart
/// waits while a friend's link is up or was up within the last 30 s, and at
/// most until the node has been off for 2 minutes: a bot whose one
/// long-lived friend stays linked while new callers cannot find it is the
/// failure above, and starts afresh then.
///
/// A bootstrap node (one that serves a TCP relay on a fixed port, as `carrier
/// node` does) never starts afresh: others reach it by its port and DHT key,
/// a fresh instance would have a new key, and it could not take the port the
/// old one holds. Nor does a node without bootstrap nodes: there is nobody
/// for a fresh instance to ask.
struct OfflineRecovery: Sendable {
    /// A step to take now.
    enum Step: Equatable, Sendable {
        case rebootstrap
        case restart
    }

    static let firstRebootstrap = Duration.seconds(10)
    static let longestRebootstrap = Duration.seconds(15)
    static let firstRestart = Duration.seconds(20)
    static let longestRestart = Duration.seconds(600)
    /// How long a friend's link that went down still says the node reaches the network.
    static let friendLinkEvidence = Duration.seconds(30)
    /// How long, off the network, a restart waits at most for friends' links.
    static let longestHeldRestart = Duration.seconds(120)

    private var nextRebootstrap: ContinuousClock.Instant?
    private var rebootstrapDelay = Self.firstRebootstrap
    private var nextRestart: ContinuousClock.Instant?
    private var restartDelay = Self.firstRestart
    /// Since when the node has been off the network (nil while on it).
    private(set) var offlineSince: ContinuousClock.Instant?
    /// Whether starting toxcore afresh is ever due (see above).
    let restarts: Bool
    /// Whether a friend's link is up now, and when the last one went down.
    private var friendLinkUp = false
    private var friendLinkDown: ContinuousClock.Instant?

    /// Starts off the network, as a node does.
    init(startedAt now: ContinuousClock.Instant, restarts: Bool = true) {
        self.restarts = restarts
        connectionChanged(connected: false, now: now)
    }

    /// What toxcore said of our own connection.
    mutating func connectionChanged(connected: Bool, now: ContinuousClock.Instant) {
        rebootstrapDelay = Self.firstRebootstrap
        if connected {
            (nextRebootstrap, nextRestart, offlineSince) = (nil, nil, nil)
            restartDelay = Self.firstRestart
        } else {
            if offlineSince == nil { offlineSince = now }
            nextRebootstrap = now + Self.firstRebootstrap
            if restarts { nextRestart = nextRestart ?? now + restartDelay }
        }
    }

    /// Whether any friend's link is up (toxcore's friend connections).
    mutating func friendLinks(anyUp: Bool, now: ContinuousClock.Instant) {
        if friendLinkUp, !anyUp { friendLinkDown = now }
        friendLinkUp = anyUp
    }

    /// A restart due now waits: a friend's link is up or was lately, and the
    /// node has been off for less than `longestHeldRestart`.
    private func restartHeld(now: ContinuousClock.Instant) -> Bool {
        let linked = friendLinkUp || friendLinkDown.map { now - $0 < Self.friendLinkEvidence } == true
        return linked && offlineSince.map { now - $0 < Self.longestHeldRestart } == true
    }

    /// toxcore was started afresh: it bootstraps at once, asks again on the
    /// usual schedule, and is restarted again later if it stays off.
    mutating func restarted(now: ContinuousClock.Instant) {
        restartDelay = min(restartDelay * 2, Self.longestRestart)
        nextRestart = restarts ? now + restartDelay : nil
        (friendLinkUp, friendLinkDown) = (false, nil)  // the old instance's links, gone with it
        rebootstrapDelay = Self.firstRebootstrap
        nextRebootstrap = now + Self.firstRebootstrap
    }

    /// The step due now, if any; its next time is set further off.
    mutating func due(now: ContinuousClock.Instant) -> Step? {
        if let nextRestart, now >= nextRestart, !restartHeld(now: now) { return .restart }
        guard let nextRebootstrap, now >= nextRebootstrap else { return nil }
        rebootstrapDelay = min(rebootstrapDelay * 2, Self.longestRebootstrap)
        self.nextRebootstrap = now + rebootstrapDelay
        return .rebootstrap
    }

    /// When the next step is (nil while connected), for tests and logs.
    var nextStep: ContinuousClock.Instant? {
        switch (nextRebootstrap, nextRestart) {
        case (let a?, let b?): min(a, b)
        case (let a?, nil): a
        case (nil, let b?): b
        case (nil, nil): nil
        }
    }
}
