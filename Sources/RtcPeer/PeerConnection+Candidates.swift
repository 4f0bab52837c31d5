import CarrierLog
import Foundation
import RtcICE
import RtcSDP

/// Candidates both ways: gathering ours and surfacing them with the first
/// local description, and taking the peer's trickled ones through
/// `CandidatePool` (held before the description, names resolved off the actor).
extension PeerConnection {
    /// Starts gathering as soon as the ICE role is known (createOffer, or the
    /// peer's offer), before the local description is set: the first gathering
    /// costs a few milliseconds. Candidates found before the local description
    /// are surfaced with it.
    func gatherEarly(controlling: Bool) {
        guard !gathering else { return }
        gathering = Self.gather(transport.ice, controlling: controlling)
    }

    /// Fixes the ICE role (libnice needs it before gathering) and gathers; whether that started.
    static func gather(_ ice: IceAgent, controlling: Bool) -> Bool {
        ice.setControlling(controlling)
        return (try? ice.gather()) != nil
    }

    func surfaceCandidates() {
        guard !candidatesSurfaced else { return }
        candidatesSurfaced = true
        let mid = localDescription?.media.first?.mid ?? "0"
        for line in localCandidates { emit(.localCandidate(candidate: line, sdpMid: mid, sdpMLineIndex: 0)) }
        if gatheringComplete { emit(.gatheringComplete) }
    }

    /// Adds a trickled remote candidate (`candidate:...`); an empty string means end of candidates.
    public func addIceCandidate(_ candidate: String) throws(PeerError) {
        switch add(candidate) {
        case .drop where remoteDescription == nil:  // too many held before the description
            throw .invalidState("more than \(CandidatePool.maxPending) candidates came before any description; dropped")
        case .drop(let reason):
            throw .badDescription("unusable candidate \(candidate.prefix(100)): \(reason)")
        default:
            return
        }
    }

    /// Carries out `CandidatePool`'s verdict on a line: ICE gets IP literals at
    /// once, host names once resolved (off the actor). Returns the verdict
    /// (`.drop` when ICE refused the candidate too).
    func add(_ line: String) -> CandidatePool.Verdict {
        let verdict = candidates.receive(line, described: remoteDescription != nil)
        return carryOut(verdict)
    }

    func carryOut(_ verdict: CandidatePool.Verdict) -> CandidatePool.Verdict {
        switch verdict {
        case .endOfCandidates:
            transport.ice.remoteCandidatesComplete()
        case .use(let text):
            do { try transport.ice.addRemoteCandidate(text) } catch {
                candidates.refused()
                return .drop(reason: "refused by ICE")
            }
        case .resolve(let candidate, let host):
            Task { [weak self] in
                let address = await RemoteCandidateScreen.resolve(host)
                await self?.resolved(candidate, host: host, address: address)
            }
        case .drop(let reason):
            Logger("peer").info("remote candidate dropped: \(reason)")
        case .held, .known:
            break
        }
        return verdict
    }

    func resolved(_ candidate: Candidate, host: String, address: String?) {
        _ = carryOut(candidates.resolved(candidate, host: host, address: address))
    }

    /// The local description with the candidates gathered so far (for peers that do not trickle).
    public func currentLocalDescription() -> String? {
        guard var description = localDescription else { return nil }
        let candidates = localCandidates.compactMap { try? Candidate(parsing: $0) }
        for index in description.media.indices where !description.media[index].isRejected {
            description.media[index].candidates = candidates
            description.media[index].endOfCandidates = gatheringComplete
        }
        return description.description
    }

    /// Waits until ICE gathering is complete (bounded).
    public func waitForGatheringComplete(timeout: Duration = .seconds(10)) async -> Bool {
        if gatheringComplete { return true }
        let timeoutTask = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.releaseGatheringWaiters()
        }
        await withCheckedContinuation { gatheringWaiters.append($0) }
        timeoutTask.cancel()
        return gatheringComplete
    }

    func releaseGatheringWaiters() {
        let waiters = gatheringWaiters
        gatheringWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    func startGathering() throws(PeerError) {
        if !gathering {
            do { try transport.ice.gather() } catch { throw .transport(error.description) }
            gathering = true
        }
        announce(connection.negotiating())
    }
}
