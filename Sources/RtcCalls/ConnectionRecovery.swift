/// What a connected session does when its transport is lost (an outage, a
/// NAT that rebinds, a network change): it restarts ICE over the signaling
/// channel, again and again, until the connection is back or the recovery
/// window has passed; DTLS, SCTP and the media streams keep their sessions
/// meanwhile. The reference peers retry three times within 120 s; here the
/// window is 30 s by default and the retries come often (every 2 s after
/// the first two), so that media is back within about 2 s of the network.
///
/// Pure: losses, restorations and the time in; actions out (tested in
/// Tests/RtcCallsTests). Both `CallMachine` and `carrier rtc` drive one.
public struct ConnectionRecovery: Sendable, Equatable {
    /// When to restart ICE after a loss, and when to give up.
    public struct Policy: Sendable, Equatable {
        /// Seconds of lost connection after which the session gives up (failed).
        public var window: Double
        /// Seconds from the loss to each ICE restart; the last gap repeats.
        public var restarts: [Double]

        /// A policy: restarts at these seconds after the loss (the last gap repeats), giving up after `window`.
        public init(window: Double = 30, restarts: [Double] = [0, 1, 3]) {
            self.window = window
            self.restarts = restarts.isEmpty ? [0] : restarts
        }

        /// The polite side starts a second later, so that both sides seldom
        /// restart at the same instant after a loss they both see.
        public func delayed(by seconds: Double) -> Policy {
            Policy(window: window, restarts: restarts.map { $0 + seconds })
        }
    }

    /// What the session should do now.
    public enum Action: Sendable, Equatable {
        case restartIce
        /// The window has passed: end the session as failed.
        case giveUp(afterSeconds: Double)
    }

    /// The policy it follows.
    public let policy: Policy
    /// When the current loss began (nil: connected).
    public private(set) var lostAt: Double?
    private var attempts = 0
    /// Losses so far, and how long the longest and the last lasted (seconds).
    public private(set) var losses = 0
    /// (See `losses`.)
    public private(set) var longestOutage = 0.0
    /// (See `losses`.)
    public private(set) var lastOutage: Double?
    /// ICE restarts asked for so far.
    public private(set) var restartsMade = 0

    /// Connected, with no losses yet.
    public init(policy: Policy = Policy()) { self.policy = policy }

    /// Whether a loss is under way.
    public var isRecovering: Bool { lostAt != nil }

    /// The connection is lost (again): the first restart may be due at once.
    public mutating func lost(now: Double) -> [Action] {
        guard lostAt == nil else { return tick(now: now) }
        lostAt = now
        attempts = 0
        losses += 1
        return tick(now: now)
    }

    /// The connection is back.
    public mutating func restored(now: Double) {
        guard let lostAt else { return }
        let outage = now - lostAt
        lastOutage = outage
        longestOutage = max(longestOutage, outage)
        self.lostAt = nil
    }

    /// What is due at `now` (seconds): a restart, or giving up.
    public mutating func tick(now: Double) -> [Action] {
        guard let lostAt else { return [] }
        let elapsed = now - lostAt
        if elapsed >= policy.window { return [.giveUp(afterSeconds: elapsed)] }
        guard elapsed >= dueOffset(of: attempts) else { return [] }
        attempts += 1
        restartsMade += 1
        return [.restartIce]
    }

    /// Seconds from the loss to restart number `attempt` (0-based): the
    /// policy's list, then its last gap again and again.
    func dueOffset(of attempt: Int) -> Double {
        let list = policy.restarts
        if attempt < list.count { return list[attempt] }
        let gap = list.count > 1 ? list[list.count - 1] - list[list.count - 2] : 2
        return list[list.count - 1] + Double(attempt - list.count + 1) * max(gap, 0.5)
    }
}
