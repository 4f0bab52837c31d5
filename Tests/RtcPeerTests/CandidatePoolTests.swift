import RtcSDP
import Testing

@testable import RtcPeer

/// The remote-candidate core on its own: what is held, used once, resolved
/// or dropped (and counted), with no ICE agent and no network.
@Suite struct CandidatePoolTests {
    static func host(_ port: Int, _ address: String = "192.0.2.1") -> String {
        "candidate:1 1 udp 2122260223 \(address) \(port) typ host"
    }

    @Test func linesBeforeTheDescriptionAreHeldThenUsedInOrder() {
        var pool = CandidatePool()
        #expect(pool.receive("a=" + Self.host(1000), described: false) == .held)
        #expect(pool.receive(Self.host(1001), described: false) == .held)
        let held = pool.described()
        #expect(held.count == 2 && pool.described().isEmpty)
        #expect(held.map { pool.receive($0, described: true) } == [.use(Self.host(1000)), .use(Self.host(1001))])
        #expect(pool.dropped.isEmpty)
    }

    @Test func aCandidateGoesToIceOncePerGeneration() {
        var pool = CandidatePool()
        #expect(pool.receive(Self.host(2000), described: true) == .use(Self.host(2000)))
        #expect(pool.receive("a=" + Self.host(2000) + "\r\n", described: true) == .known)
        pool.iceRestarted()
        #expect(pool.receive(Self.host(2000), described: true) == .use(Self.host(2000)))
    }

    @Test func endOfCandidatesAndUnusableLines() {
        var pool = CandidatePool()
        #expect(pool.receive("", described: true) == .endOfCandidates)
        #expect(pool.receive("a=end-of-candidates", described: false) == .endOfCandidates)
        #expect(pool.receive("candidate:garbage", described: true) == .drop(reason: "not a candidate line"))
        let invalid = pool.receive(Self.host(3000, "abc.invalid"), described: true)
        #expect(invalid == .drop(reason: "reserved .invalid host name"))
        #expect(pool.dropped == ["not a candidate line": 1, "reserved .invalid host name": 1])
    }

    @Test func hostNamesAreResolvedFirst() throws {
        var pool = CandidatePool()
        guard case .resolve(let candidate, let host) = pool.receive(Self.host(4000, "peer.local"), described: true)
        else {
            Issue.record("an mDNS name must be resolved first")
            return
        }
        #expect(host == "peer.local")
        #expect(pool.resolved(candidate, host: host, address: "192.0.2.9") == .use(Self.host(4000, "192.0.2.9")))
        #expect(pool.resolved(candidate, host: host, address: nil) == .drop(reason: "mDNS name did not resolve"))
        #expect(
            pool.resolved(candidate, host: "peer.example", address: nil) == .drop(reason: "host name did not resolve"))
    }

    /// Only mDNS names are looked up: any other name would send a DNS query of
    /// the peer's choosing from this machine. And not too many at once.
    @Test func onlyMdnsNamesAreLookedUpAndBoundedInNumber() {
        var pool = CandidatePool()
        for name in ["attacker.example", "x.y.local", "under_score.local", "local", "a.local.example"] {
            #expect(
                pool.receive(Self.host(5000, name), described: true)
                    == .drop(reason: "host name other than .local: not looked up"), "\(name)")
        }
        var verdicts: [CandidatePool.Verdict] = []
        for port in 0..<5 {
            verdicts.append(pool.receive(Self.host(6000 + port, "peer\(port).local"), described: true))
        }
        #expect(verdicts.filter { if case .resolve = $0 { true } else { false } }.count == CandidatePool.maxResolving)
        #expect(verdicts.last == .drop(reason: "more than 4 names resolving"))
    }

    /// A peer that floods candidates gets bounded memory and a count, not an error loop.
    @Test func floodsAreBounded() {
        var pool = CandidatePool()
        for port in 0..<CandidatePool.maxPending { _ = pool.receive(Self.host(10_000 + port), described: false) }
        #expect(
            pool.receive(Self.host(9999), described: false)
                == .drop(reason: "more than 256 candidates before a description"))
        for port in 0..<CandidatePool.maxKnown { _ = pool.receive(Self.host(20_000 + port), described: true) }
        #expect(pool.receive(Self.host(9998), described: true) == .drop(reason: "more than 1024 remote candidates"))
        pool.refused()
        #expect(pool.dropped["refused by ICE (component or transport not used)"] == 1)
        #expect(pool.dropped.values.reduce(0, +) == 3)
    }
}
