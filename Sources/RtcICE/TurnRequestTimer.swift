/// Retransmission of TURN requests on a UDP leg (RFC 8489 §6.2.1): libnice
/// sends a request once over TCP, trusting the transport, and the bridge
/// carries it on over UDP, so the bridge sends it again at 0.5, 1.5, 3.5 …
/// seconds until the server answers, 7 sends in all. Pure: the caller gives
/// the time in seconds and sends what `due` returns.
struct TurnRequestTimer {
    private struct Pending {
        var datagram: [UInt8]
        var sends: Int
        var nextAt: Double
        var interval: Double
    }

    private var pending: [[UInt8]: Pending] = [:]

    /// RFC 8489's RTO to start with, and Rc.
    static let initialInterval = 0.5
    static let maxSends = 7
    /// Requests waited for at once; more are sent once and not again.
    static let maxPending = 64

    /// A request just sent (other messages are not timed).
    mutating func sent(_ datagram: [UInt8], at now: Double) {
        guard let message = TurnMessage(datagram), message.messageClass == .request, pending.count < Self.maxPending
        else { return }
        pending[message.transactionId] = Pending(
            datagram: datagram, sends: 1, nextAt: now + Self.initialInterval, interval: Self.initialInterval)
    }

    /// An answer came: its request is done.
    mutating func answered(_ datagram: [UInt8]) {
        guard let message = TurnMessage(datagram), message.messageClass == .success || message.messageClass == .error
        else { return }
        pending[message.transactionId] = nil
    }

    /// The requests to send again now; those sent `maxSends` times are given up.
    mutating func due(at now: Double) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for (id, var request) in pending where request.nextAt <= now {
            guard request.sends < Self.maxSends else {
                pending[id] = nil
                continue
            }
            out.append(request.datagram)
            request.sends += 1
            request.interval *= 2
            request.nextAt = now + request.interval
            pending[id] = request
        }
        return out
    }

    /// When `due` has something next; nil when nothing is waiting.
    var nextDeadline: Double? { pending.values.map(\.nextAt).min() }
}
