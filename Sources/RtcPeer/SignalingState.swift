/// What kind of session description is being applied (the W3C RTCSdpType,
/// without `pranswer`, which no peer of ours sends).
public enum SdpType: String, Sendable, Equatable {
    case offer, answer
    /// Back to the last stable state: drops the pending offer (JSEP §4.1.10.2).
    case rollback
}

/// The JSEP signaling states (RFC 8829 §3.2, the W3C RTCSignalingState
/// without the provisional-answer states) and the transitions between them,
/// as a pure table: which description may be applied in which state, and
/// where it leads. `PeerConnection` consults it before it touches anything,
/// so a description that does not fit fails with a clear error and changes nothing.
public enum SignalingState: String, Sendable, Equatable {
    case stable
    case haveLocalOffer = "have-local-offer"
    case haveRemoteOffer = "have-remote-offer"

    /// The state after applying a local description of `type`, or why it cannot be applied.
    public func applyingLocal(_ type: SdpType) -> Result<SignalingState, PeerError> {
        switch (self, type) {
        case (.stable, .offer), (.haveLocalOffer, .offer): .success(.haveLocalOffer)
        case (.haveRemoteOffer, .answer): .success(.stable)
        case (.haveLocalOffer, .rollback): .success(.stable)
        case (.stable, .answer), (.haveLocalOffer, .answer): .failure(.invalidState("no offer from the peer to answer"))
        case (.haveRemoteOffer, .offer):
            .failure(.invalidState("an offer from the peer awaits an answer; answer it before offering"))
        case (_, .rollback): .failure(.invalidState("no local offer to roll back (state \(rawValue))"))
        }
    }

    /// The state after applying a remote description of `type`, or why it cannot be applied.
    public func applyingRemote(_ type: SdpType) -> Result<SignalingState, PeerError> {
        switch (self, type) {
        case (.stable, .offer): .success(.haveRemoteOffer)
        case (.haveLocalOffer, .answer): .success(.stable)
        case (.haveLocalOffer, .offer):
            // Glare: perfect negotiation decides; the polite side rolls back first.
            .failure(.invalidState("an offer of ours is pending: roll it back before taking the peer's"))
        case (.haveRemoteOffer, .offer): .failure(.invalidState("an offer from the peer is already pending"))
        case (.stable, .answer), (.haveRemoteOffer, .answer):
            .failure(.invalidState("an answer came, but no offer of ours is pending"))
        case (_, .rollback):
            .failure(.invalidState("rolling back the peer's offer is not supported; answer it or close"))
        }
    }
}
