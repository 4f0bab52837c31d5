/// Who may hold the HTTP server's connections, and for how long. Pure: the
/// time comes in, and it answers with the sockets to cut.
///
/// libmicrohttpd's timeout counts idle time only, so a client that sends a
/// header line every 20 s held a connection for ever, and 64 such sockets
/// from each of four addresses held all 256. Here:
/// - a request must be whole within `requestSeconds` of its connection's
///   start or of the end of the request before it; past it the socket is
///   shut down (libmicrohttpd then closes it);
/// - once `1 - reservedShare` of the connections are taken, an address that
///   already holds `busyAddress` of them gets no more: the rest is kept for
///   addresses that hold few.
struct ConnectionGuard: Sendable {
    /// Connections at once, in all (libmicrohttpd's limit too).
    var maxConnections: Int
    /// The share kept for addresses holding fewer than `busyAddress` connections.
    var reservedShare = 0.25
    /// Connections from one address past which it counts as busy.
    var busyAddress = 4
    /// Milliseconds a request may take, counted as above.
    var requestMilliseconds: Int64

    private struct Connection {
        var address: String
        var descriptor: Int32
        var since: Int64
    }

    private var connections: [UInt: Connection] = [:]
    private var perAddress: [String: Int] = [:]
    /// Connections admitted but not started yet (accepted on another thread
    /// just now), with when: one libmicrohttpd drops between the two (out of
    /// memory, say) is forgotten after `admittedMilliseconds`.
    private var admitted: [(address: String, at: Int64)] = []
    static let admittedMilliseconds: Int64 = 10_000

    init(maxConnections: Int, requestMilliseconds: Int64) {
        self.maxConnections = maxConnections
        self.requestMilliseconds = requestMilliseconds
    }

    /// Whether a new connection from `address` may be accepted.
    mutating func admit(_ address: String, now: Int64) -> Bool {
        admitted.removeAll { now - $0.at > Self.admittedMilliseconds }
        let held = (perAddress[address] ?? 0) + admitted.filter { $0.address == address }.count
        let total = connections.count + admitted.count
        let open = Int((Double(maxConnections) * (1 - reservedShare)).rounded(.down))
        guard total < open || held < busyAddress else { return false }
        admitted.append((address, now))
        return true
    }

    /// A connection started (`id`: libmicrohttpd's connection).
    mutating func started(_ id: UInt, address: String, descriptor: Int32, now: Int64) {
        if let waiting = admitted.firstIndex(where: { $0.address == address }) { admitted.remove(at: waiting) }
        connections[id] = Connection(address: address, descriptor: descriptor, since: now)
        perAddress[address, default: 0] += 1
    }

    /// A request on the connection was answered: the next one's time starts.
    mutating func requestEnded(_ id: UInt, now: Int64) { connections[id]?.since = now }

    /// The connection closed.
    mutating func closed(_ id: UInt) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        let left = (perAddress[connection.address] ?? 1) - 1
        perAddress[connection.address] = left > 0 ? left : nil
    }

    /// The sockets of requests past their time; each is reported again
    /// until it closes (a shutdown is harmless twice).
    func overdue(now: Int64) -> [Int32] {
        connections.values.filter { now - $0.since > requestMilliseconds }.map(\.descriptor)
    }

    /// Connections held now.
    var count: Int { connections.count }
}
