import RtcICE

/// The W3C connection state from what ICE and DTLS report (pure;
/// `PeerConnection` feeds it events and emits the changes it returns).
///
/// - Connected once DTLS is; a disconnection or an ICE restart afterwards
///   keeps the DTLS session, so ICE connecting again is connected again.
/// - ICE failing on an established connection (consent lost: an outage, a NAT
///   that rebound) is `disconnected`, not `failed`: DTLS, SCTP and RTP keep
///   their sessions and an ICE restart brings them back; the caller decides
///   how long to try (`ConnectionRecovery`). Such losses are counted.
/// - ICE failing before that, or DTLS failing, is `failed`, with a reason.
/// - `closed` is final.
struct ConnectionStateMachine {
    private(set) var state = PeerConnectionState.new
    private(set) var dtlsConnected = false
    /// Times ICE lost an established connection (`PeerStats.connectionLosses`).
    private(set) var iceLosses = 0
    /// Why the connection failed, when it did.
    private(set) var failureReason: String?

    /// Negotiation started (a local description was set).
    mutating func negotiating() -> PeerConnectionState? {
        state == .new ? move(to: .connecting) : nil
    }

    /// The DTLS handshake completed.
    mutating func dtlsUp() -> PeerConnectionState? {
        dtlsConnected = true
        return move(to: .connected)
    }

    /// The DTLS handshake failed, or the session broke.
    mutating func dtlsFailed(_ reason: String) -> PeerConnectionState? {
        failureReason = reason  // DTLS's own words say more than an earlier ICE failure's
        return move(to: .failed)
    }

    /// ICE reported a new state.
    mutating func ice(_ iceState: IceState) -> PeerConnectionState? {
        switch iceState {
        case .connected, .completed:
            return dtlsConnected && state == .disconnected ? move(to: .connected) : nil
        case .failed where dtlsConnected:
            guard state != .closed else { return nil }
            iceLosses += 1
            return move(to: .disconnected)
        case .failed:
            failureReason = failureReason ?? "ICE failed: no candidate pair works"
            return move(to: .failed)
        case .disconnected where state == .connected:
            return move(to: .disconnected)
        default:
            return nil
        }
    }

    /// The application closed the connection (or the peer closed DTLS).
    mutating func close() -> PeerConnectionState? { move(to: .closed) }

    private mutating func move(to new: PeerConnectionState) -> PeerConnectionState? {
        guard new != state, state != .closed else { return nil }
        state = new
        return new
    }
}
