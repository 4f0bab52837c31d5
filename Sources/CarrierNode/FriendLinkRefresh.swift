/// When to start toxcore's link to a friend afresh: taken out of toxcore and
/// put back at once, so toxcore forgets the link and finds the friend anew.
/// Pure: time is passed in.
///
/// toxcore (0.2.18, and upstream since) can leave a friend's link half open
/// after the friend restarts on a new port, the pattern of a caller that is a
/// new process each time (traced inside toxcore; docs/benchmarks.md, "A
/// returning friend"):
/// - the caller learns the bot's DHT key first, and its handshake reaches the
///   bot over a TCP relay;
/// - the bot's new connection takes the friend's UDP address from the last
///   process, which is gone, and toxcore never replaces an address on a
///   loopback or LAN network with the one its DHT then finds;
/// - the caller's side is established (its address for the bot is right), so
///   it sends over UDP only and ignores the bot's new handshakes, while the
///   bot drops every packet from the caller's new address and never confirms;
/// - neither calls the other online until the caller's side times out for
///   want of pings, 32 s later. 5-13% of such calls waited 41-45 s, not 11 s.
///
/// So, both ways:
/// - **A friend that left** (went offline while this node is on the network)
///   and stays away `afterLeaving` (5 s) is started afresh once, which
///   forgets its last address: the bot side, for any caller. A link that
///   comes back within the 5 s keeps all toxcore knew. Only on a node that
///   runs on 127.0.0.1 alone (`CarrierOptions.loopbackOnly`): across the
///   network lab's NATs, where friends' links drop when the routers change
///   and the friend is the same process, it threw away what toxcore knew of
///   the friend (its DHT key, its TCP relays), and two of the lab's calls
///   failed to connect in time.
/// - **A friend someone waits for** (`waitUntilConnected`) that has not come
///   online 20 s into the wait, while this node is on the network, is started
///   afresh: the waiting side, whatever the other runs. Nothing in toxcore's
///   API shows the half-open state, so this acts on time alone. 20 s is twice
///   what a returning friend takes here (8-12 s); the interval then doubles,
///   up to 5 minutes, so a friend that is slow to reach, or simply away, is
///   not reset more and more often.
struct FriendLinkRefresh: Sendable {
    /// The first wait (`CarrierOptions.friendLinkRefreshAfter`).
    static let first = Duration.seconds(20)
    static let longest = Duration.seconds(300)
    /// How long a friend that left stays away before its link starts afresh.
    static let afterLeaving = Duration.seconds(5)
    /// The first wait; later ones double it, up to `longest`.
    let firstDelay: Duration

    init(after firstDelay: Duration = Self.first) {
        self.firstDelay = firstDelay
    }

    /// A friend whose link to start afresh now.
    struct Due: Equatable {
        var friend: UserId
        /// How long it has been away (`left`) or waited for.
        var waited: Duration
        /// Whether it is due as a friend that left, rather than one waited for.
        var left: Bool
    }

    /// Friends that went offline, and when (until they are started afresh or come back).
    private var left: [UserId: ContinuousClock.Instant] = [:]

    /// A friend's link went up or down, while this node was `online` or not.
    /// A link lost while this node is off the network is not the friend
    /// leaving: its address still holds, and toxcore's retries to it are the
    /// quickest way back.
    mutating func friendConnection(_ friend: UserId, up: Bool, online: Bool, now: ContinuousClock.Instant) {
        left[friend] = up || !online ? nil : now
    }

    private struct Waiting: Sendable {
        /// When the wait began, or the node came back on the network.
        var began: ContinuousClock.Instant
        /// Since when the next refresh counts: `began`, or the last refresh.
        var since: ContinuousClock.Instant
        var delay: Duration
    }

    private var waiting: [UserId: Waiting] = [:]
    private var wasOnline = false

    /// The friends whose link to start afresh now, with how long they have
    /// been away or waited for. `awaited`: the friends someone waits for that
    /// are not connected; `online`: whether this node is on the network. A
    /// friend that comes online, or that nobody waits for any more, is
    /// forgotten; a node off the network stops every clock, and starts them
    /// again from zero when it is back.
    mutating func due(awaited: Set<UserId>, online: Bool, now: ContinuousClock.Instant) -> [Due] {
        defer { wasOnline = online }
        var refresh: [Due] = []
        for (friend, since) in left where now - since >= Self.afterLeaving {
            left[friend] = nil
            refresh.append(Due(friend: friend, waited: now - since, left: true))
        }
        if waiting.isEmpty, awaited.isEmpty { return refresh }  // the usual case, on every loop
        waiting = waiting.filter { awaited.contains($0.key) }
        guard online else { return refresh }
        for friend in awaited {
            guard var entry = waiting[friend], wasOnline else {
                waiting[friend] = Waiting(began: now, since: now, delay: waiting[friend]?.delay ?? firstDelay)
                continue
            }
            if now - entry.since >= entry.delay {
                if !refresh.contains(where: { $0.friend == friend }) {
                    refresh.append(Due(friend: friend, waited: now - entry.began, left: false))
                }
                entry.since = now
                entry.delay = min(entry.delay * 2, max(Self.longest, firstDelay))
                waiting[friend] = entry
            }
        }
        return refresh.sorted { $0.friend.description < $1.friend.description }
    }
}
