/// Whether toxcore's "connected" is true. Pure: time and what the sockets
/// saw are passed in.
///
/// toxcore puts its own address in its peer lists when a bootstrap node hands
/// it back (seen on 127.0.0.1, and possible on any host that reaches its own
/// public address): it then builds onion paths through itself, announces to
/// itself, and reports itself connected with nobody else there. A node whose
/// bootstrap node stopped stayed "online" for minutes, alone, sending ~18
/// datagrams a second to its own port; no friend could have found it. (On
/// loopback and LAN addresses toxcore labels that connection "TCP" whatever
/// carries it, so the label cannot be trusted either way.) On a real network
/// other nodes answer its DHT pings and onion requests every few seconds, over
/// UDP, or over a TCP relay when UDP is blocked, which toxcore pings every
/// 30 s. So a node that toxcore calls connected but that has heard no other
/// node, on its UDP socket or any TCP connection, for `silence` (60 s) counts
/// as off the network, and `OfflineRecovery` goes to work.
///
/// Once alone, a node stays so until it hears another node: a toxcore
/// started afresh talks to itself again and would claim to be back.
struct IsolationCheck: Sendable {
    /// Nobody else heard for this long, while toxcore says connected: alone.
    let silence: Duration

    private var toxConnected = false
    /// Since when toxcore has said connected, or the last time another node was heard, whichever is later.
    private var heardSince: ContinuousClock.Instant?
    private var alone = false

    /// `silence`: 60 s for a node (`CarrierOptions.aloneAfter`).
    init(silence: Duration = .seconds(60)) { self.silence = silence }

    /// What toxcore said of its own connection.
    mutating func toxConnection(connected: Bool, now: ContinuousClock.Instant) {
        if connected, !toxConnected { heardSince = max(heardSince ?? now, now) }
        toxConnected = connected
    }

    /// When another node was last heard (`SocketWatch`); an instant not newer
    /// than the last one changes nothing.
    mutating func heard(at instant: ContinuousClock.Instant) {
        if let heardSince, instant <= heardSince { return }
        heardSince = instant
        alone = false
    }

    /// toxcore was started afresh: it has said nothing yet, and the silence
    /// counts from now (a node already alone stays so until it hears someone).
    mutating func restarted(now: ContinuousClock.Instant) {
        toxConnected = false
        heardSince = now
    }

    /// True when toxcore says connected but nobody else has been heard for
    /// `silence`, or since the node was last found alone.
    mutating func isolated(now: ContinuousClock.Instant) -> Bool {
        guard toxConnected else { return false }  // off by toxcore's own word: nothing to add
        if let heardSince, now - heardSince >= silence { alone = true }
        return alone
    }
}
