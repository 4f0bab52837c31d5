/// Offers and answers on a connection under way, when either side may offer
/// at any moment: "perfect negotiation" (W3C WebRTC 1.0 §10.7). Two offers
/// that cross are settled by fixed roles both sides agree on: the polite
/// side rolls its own offer back, answers the peer's and offers again
/// afterwards; the impolite side ignores the peer's offer and waits for the
/// answer to its own. Without it, two renegotiations at once left each side
/// waiting for an answer to an offer the other had dropped, for the rest of
/// the call, and no later renegotiation or ICE restart could happen.
///
/// Pure: remote descriptions and local wishes in, steps for the session to
/// carry out, in order (tested in Tests/RtcCallsTests).
public struct PerfectNegotiation: Sendable, Equatable {
    /// What the session carries out.
    public enum Step: Sendable, Equatable {
        /// Create an offer (restarting ICE if asked), set it locally, send it.
        case offer(iceRestart: Bool)
        /// Drop our pending offer (`PeerConnection.rollback`).
        case rollback
        /// Apply the peer's offer, create and send the answer.
        case answer(String)
        /// Apply the peer's answer to our offer.
        case applyAnswer(String)
    }

    /// The polite side yields when offers cross. The callee of a call, the
    /// answering side of `carrier rtc`: both ends know which they are.
    public let polite: Bool
    /// Our offer is out; its answer is expected.
    public private(set) var awaitingAnswer = false
    /// The pending offer restarts ICE.
    private var pendingRestartsIce = false
    /// A renegotiation wanted while another was under way (true: with an ICE
    /// restart), made once the current one is done.
    private var queued: Bool?
    /// Offers from the peer ignored because ours was out (impolite side), for stats and tests.
    public private(set) var ignoredOffers = 0

    /// A negotiation with nothing under way.
    public init(polite: Bool) { self.polite = polite }

    /// We want to offer (a new section, an ICE restart). While an offer is out,
    /// the wish waits for its answer; wishes merge (a restart wins).
    public mutating func wantOffer(iceRestart: Bool) -> [Step] {
        guard !awaitingAnswer else {
            queued = (queued ?? false) || iceRestart
            return []
        }
        awaitingAnswer = true
        pendingRestartsIce = iceRestart
        return [.offer(iceRestart: iceRestart)]
    }

    /// The peer's offer on the connection under way.
    public mutating func remoteOffer(_ sdp: String) -> [Step] {
        guard awaitingAnswer else { return [.answer(sdp)] }
        guard polite else {
            ignoredOffers += 1
            return []  // ours goes first: the polite peer answers it, then offers again
        }
        // Ours yields: answered theirs, then offer ours again.
        awaitingAnswer = false
        queued = (queued ?? false) || pendingRestartsIce
        return [.rollback, .answer(sdp)] + flushQueued()
    }

    /// The peer's answer. One that answers no offer of ours is stale (the
    /// offer was rolled back or replaced) and is dropped.
    public mutating func remoteAnswer(_ sdp: String) -> [Step] {
        guard awaitingAnswer else { return [] }
        awaitingAnswer = false
        return [.applyAnswer(sdp)] + flushQueued()
    }

    /// No answer came in time (signaling lost it, or the peer's offer crossed
    /// ours and it is the impolite one too): take our offer back and offer anew.
    public mutating func retry(iceRestart: Bool) -> [Step] {
        guard awaitingAnswer else { return wantOffer(iceRestart: iceRestart) }
        pendingRestartsIce = pendingRestartsIce || iceRestart
        return [.rollback, .offer(iceRestart: pendingRestartsIce)]
    }

    private mutating func flushQueued() -> [Step] {
        guard let restart = queued else { return [] }
        queued = nil
        return wantOffer(iceRestart: restart)
    }
}
