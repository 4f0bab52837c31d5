/// What a new link between two loopback-only nodes does before a file starts
/// on it: both sides learn where the other's toxcore answers, and the file
/// waits until the link is a second old. Pure: time is passed in.
///
/// Why (captured on lo; docs/benchmarks.md, "A returning sender"):
/// - toxcore moves a link to UDP, for every packet, on the side whose DHT
///   finds the friend's address first; the other side drops the friend's UDP
///   packets until its own DHT finds it (`Carrier+DhtHint`). A receiver whose
///   link to the sender `FriendLinkRefresh` had just started afresh found the
///   sender a second late: a second of file data lost, then a 3.5 s stall.
/// - Each side's hint (sent when a file waits for the link, and answered)
///   makes both find each other within a round trip; but a file whose first
///   burst (64 packets) goes out then, on a link a tenth of a second old, is
///   acknowledged too late for toxcore's congestion control, which measures
///   every 50 ms, and its rate fell to a few packets a second and took 15 s
///   to climb back (1.7-1.9 MB/s for 30 MB).
/// - Started when the link is a second old, such files ran at 3.58-3.68 MB/s,
///   6 of 6 in each of three sittings (3.0 before, when they did not stall).
///
/// A friend that sends no hint (another build) costs a file the same second.
struct NewLinkWarmUp: Sendable {
    /// How old a link is before files start on it.
    static let age = Duration.seconds(1)

    /// What to do for a friend.
    enum Action: Equatable, Sendable {
        /// Send our DHT key and UDP port.
        case sendHint
        /// Ask the friend's node (from its hint) for nodes.
        case askFriendsNode
    }

    private struct Link {
        var upAt: ContinuousClock.Instant
        var sentHint = false
        var askedFriendsNode = false
        var filesStarted = false
    }

    private var links: [UserId: Link] = [:]

    /// A friend's link went up or down.
    mutating func link(_ friend: UserId, up: Bool, now: ContinuousClock.Instant) {
        guard up else {
            links[friend] = nil
            return
        }
        if links[friend] == nil { links[friend] = Link(upAt: now) }
    }

    /// A file waits for a friend's link to warm up: tell the friend where our
    /// node is, once per link, so it tells us where its node is. Only links
    /// that carry a file exchange hints: the side that finds the other first
    /// goes direct a few tens of milliseconds before the other and its
    /// packets in between are lost, which cost a call's signaling toxcore's
    /// one-second resend (returning calls' median went from 8.6 s to 9.5 s
    /// when every link exchanged hints); a file starts after that anyway.
    mutating func fileWaits(for friend: UserId) -> [Action] {
        guard let entry = links[friend], !entry.sentHint else { return [] }
        links[friend]?.sentHint = true
        return [.sendHint]
    }

    /// A hint from a friend: ask its node, and answer with ours, once per
    /// link. A hint from a friend whose link we do not see up yet is left
    /// alone (the friend's files wait at most `age` for us anyway).
    mutating func hint(from friend: UserId) -> [Action] {
        guard let entry = links[friend], !entry.askedFriendsNode else { return [] }
        links[friend]?.askedFriendsNode = true
        links[friend]?.sentHint = true
        return entry.sentHint ? [.askFriendsNode] : [.askFriendsNode, .sendHint]
    }

    /// Whether files to a friend may start now: its link is up and `age` old.
    func filesMayStart(_ friend: UserId, now: ContinuousClock.Instant) -> Bool {
        guard let entry = links[friend] else { return false }
        return now - entry.upAt >= Self.age
    }

    /// The friends whose links just became `age` old: their files start now, once.
    mutating func due(now: ContinuousClock.Instant) -> [UserId] {
        var due: [UserId] = []
        for (friend, entry) in links where !entry.filesStarted && now - entry.upAt >= Self.age {
            links[friend]?.filesStarted = true
            due.append(friend)
        }
        return due.sorted { $0.description < $1.description }
    }
}
