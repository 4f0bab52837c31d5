import Foundation
import RtcSDP

/// The remote candidates of one peer connection, from the line the peer sent
/// to what ICE is given (pure; `PeerConnection` carries out the verdicts).
///
/// - Before the remote description, trickled lines are held (trickle may race
///   the description, RFC 8838 §8), at most `maxPending`.
/// - Each line goes through `RemoteCandidateScreen`: IP literals to ICE, host
///   names to be resolved first, the rest dropped.
/// - Within one ICE generation a candidate goes to ICE once: a peer may repeat
///   one (in a re-offer's SDP, and trickled too), and given again to a
///   connected libnice agent it restarts checks and trips libnice's own state
///   assertion. At most `maxKnown` per generation.
/// - Whatever is not used is counted by reason (`PeerStats.droppedCandidates`).
struct CandidatePool {
    static let maxPending = 256
    static let maxKnown = 1024
    /// mDNS names being resolved at once, and in all in one connection
    /// (each look-up holds a thread of the pool for up to seconds).
    static let maxResolving = 4
    static let maxResolved = 32

    /// What to do with a line now.
    enum Verdict: Equatable {
        /// The peer has no more candidates (`a=end-of-candidates`, or an empty line).
        case endOfCandidates
        /// Kept until the remote description comes (`described()`).
        case held
        /// Already given to ICE in this generation: nothing to do.
        case known
        /// Give this candidate text to ICE (and call `refused` if it will not take it).
        case use(String)
        /// Resolve `host` off the actor, then `resolved(_:address:)`.
        case resolve(Candidate, host: String)
        /// Not used; counted under `reason`.
        case drop(reason: String)
    }

    private var pending: [String] = []
    private var resolving = 0
    private var resolutions = 0
    private var known: Set<String> = []
    /// Candidates not used, by reason.
    private(set) var dropped: [String: Int] = [:]

    /// A line the peer sent (trickled, or from its description when `described`).
    mutating func receive(_ candidate: String, described: Bool) -> Verdict {
        let line = candidate.trimmingCharacters(in: .whitespacesAndNewlines)
        if line.isEmpty || line == "a=end-of-candidates" { return .endOfCandidates }
        guard described else {
            guard pending.count < Self.maxPending else {
                return drop("more than \(Self.maxPending) candidates before a description")
            }
            pending.append(line)
            return .held
        }
        switch RemoteCandidateScreen.screen(line) {
        case .use(let text): return use(text)
        case .resolve(let candidate, let host):
            guard resolving < Self.maxResolving else { return drop("more than \(Self.maxResolving) names resolving") }
            guard resolutions < Self.maxResolved else { return drop("more than \(Self.maxResolved) names to resolve") }
            resolving += 1
            resolutions += 1
            return .resolve(candidate, host: host)
        case .drop(let reason): return drop(reason)
        }
    }

    /// The remote description came: the held lines, to `receive` in order.
    mutating func described() -> [String] {
        defer { pending = [] }
        return pending
    }

    /// A name resolved (nil: it did not): the candidate with its address, or a drop.
    mutating func resolved(_ candidate: Candidate, host: String, address: String?) -> Verdict {
        resolving = max(resolving - 1, 0)
        guard let address else {
            return drop(host.hasSuffix(".local") ? "mDNS name did not resolve" : "host name did not resolve")
        }
        var candidate = candidate
        candidate.address = address
        return use(candidate.description)
    }

    /// ICE would not take a candidate this pool said to use.
    mutating func refused() {
        count("refused by ICE (component or transport not used)")
    }

    /// An ICE restart: a new generation, in which every candidate is new again.
    mutating func iceRestarted() {
        known = []
    }

    private mutating func use(_ text: String) -> Verdict {
        guard !known.contains(text) else { return .known }
        guard known.count < Self.maxKnown else { return drop("more than \(Self.maxKnown) remote candidates") }
        known.insert(text)
        return .use(text)
    }

    private mutating func drop(_ reason: String) -> Verdict {
        count(reason)
        return .drop(reason: reason)
    }

    private mutating func count(_ reason: String) {
        dropped[reason, default: 0] += 1
    }
}
