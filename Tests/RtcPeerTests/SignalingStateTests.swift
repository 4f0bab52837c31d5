import Testing

@testable import RtcPeer

/// The JSEP signaling table: what may be applied in which state.
@Suite struct SignalingStateTests {
    @Test func theTableAllowsWhatJsepAllows() throws {
        #expect(try SignalingState.stable.applyingLocal(.offer).get() == .haveLocalOffer)
        #expect(try SignalingState.haveLocalOffer.applyingLocal(.offer).get() == .haveLocalOffer)
        #expect(try SignalingState.haveLocalOffer.applyingLocal(.rollback).get() == .stable)
        #expect(try SignalingState.haveRemoteOffer.applyingLocal(.answer).get() == .stable)
        #expect(try SignalingState.stable.applyingRemote(.offer).get() == .haveRemoteOffer)
        #expect(try SignalingState.haveLocalOffer.applyingRemote(.answer).get() == .stable)
    }

    @Test func whatDoesNotFitSaysWhy() {
        let refused: [(SignalingState, Bool, SdpType, String)] = [
            (.stable, true, .answer, "no offer from the peer"),
            (.haveRemoteOffer, true, .offer, "awaits an answer"),
            (.stable, true, .rollback, "no local offer to roll back"),
            (.haveLocalOffer, false, .offer, "roll it back"),
            (.haveRemoteOffer, false, .offer, "already pending"),
            (.stable, false, .answer, "no offer of ours"),
            (.haveRemoteOffer, false, .rollback, "not supported"),
        ]
        for (state, local, type, words) in refused {
            let result = local ? state.applyingLocal(type) : state.applyingRemote(type)
            guard case .failure(let error) = result else {
                Issue.record("\(state) \(local ? "local" : "remote") \(type) was allowed")
                continue
            }
            #expect(error.description.contains(words))
        }
    }
}
