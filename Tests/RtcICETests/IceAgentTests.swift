import Foundation
import TestSupport
import Testing

@testable import RtcICE

/// An agent whose events and packets come out as async streams.
final class IcePeer: Sendable {
    let agent: IceAgent
    let events: AsyncStream<IceEvent>
    let packets: AsyncStream<[UInt8]>

    init(controlling: Bool, configure: (inout IceConfiguration) -> Void = { _ in }) throws {
        var configuration = IceConfiguration(controlling: controlling)
        configuration.localAddresses = ["127.0.0.1"]
        configure(&configuration)
        let (events, eventSink) = AsyncStream<IceEvent>.makeStream()
        let (packets, packetSink) = AsyncStream<[UInt8]>.makeStream()
        self.events = events
        self.packets = packets
        agent = try IceAgent(
            configuration: configuration, onEvent: { eventSink.yield($0) }, onPacket: { packetSink.yield($0) })
    }

    /// Gives each agent the other's ICE credentials.
    static func introduce(_ a: IcePeer, _ b: IcePeer) {
        let (aUfrag, aPwd) = a.agent.localCredentials
        let (bUfrag, bPwd) = b.agent.localCredentials
        a.agent.setRemoteCredentials(ufrag: bUfrag, pwd: bPwd)
        b.agent.setRemoteCredentials(ufrag: aUfrag, pwd: aPwd)
    }
}

@Suite(.serialized) struct IceAgentTests {
    /// Trickles candidates both ways as they are gathered, then waits for both sides to connect.
    static func connect(_ a: IcePeer, _ b: IcePeer) async throws -> Bool {
        IcePeer.introduce(a, b)
        try a.agent.gather()
        try b.agent.gather()
        async let aConnected = trickle(from: a, to: b)
        async let bConnected = trickle(from: b, to: a)
        let (first, second) = try await (aConnected, bConnected)
        return first && second
    }

    static func trickle(from source: IcePeer, to target: IcePeer) async throws -> Bool {
        let result = await source.events.first(within: .seconds(10)) { event -> Bool? in
            switch event {
            case .localCandidate(let line):
                try? target.agent.addRemoteCandidate(line)
                return nil
            case .gatheringComplete:
                target.agent.remoteCandidatesComplete()
                return nil
            case .stateChanged(.completed), .stateChanged(.connected): return true
            case .stateChanged(.failed): return false
            default: return nil
            }
        }
        return result ?? false
    }

    @Test func twoAgentsConnectOnLoopbackAndCarryData() async throws {
        let offerer = try IcePeer(controlling: true)
        let answerer = try IcePeer(controlling: false)
        defer {
            offerer.agent.close()
            answerer.agent.close()
        }
        let started = ContinuousClock.now
        #expect(try await Self.connect(offerer, answerer))
        print("ICE connected on loopback in \(ContinuousClock.now - started)")  // informational
        let credentials = offerer.agent.localCredentials
        #expect(credentials.ufrag.count >= 4 && credentials.pwd.count >= 22)  // RFC 8445 §5.3

        async let received = answerer.packets.first(within: .seconds(5)) { $0 == Array("hello".utf8) ? true : nil }
        #expect(await Self.sendUntilSent(offerer, Array("hello".utf8)))
        #expect(await received == true)
        let pair = try #require(offerer.agent.selectedPair)
        #expect(
            pair.local.contains("127.0.0.1") && pair.remote.contains("127.0.0.1") && pair.local.contains("typ host"))

        // The selected socket was given room for bursts: the kernel reports
        // twice what was set, capped at net.core.rmem_max unless forced.
        let limit =
            (try? String(contentsOfFile: "/proc/sys/net/core/rmem_max", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
        let expected = 2 * min(Int(IceAgent.socketBufferBytes), max(limit, 212_992))
        var sizes = offerer.agent.selectedSocketBufferSizes
        let deadline = ContinuousClock.now + .seconds(2)
        while (sizes?.receive ?? 0) < expected, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))  // the selected-pair signal may still be on its way
            sizes = offerer.agent.selectedSocketBufferSizes
        }
        #expect((sizes?.receive ?? 0) >= expected, "receive buffer \(sizes?.receive ?? 0), want \(expected)")

        // Checks done: libnice's check timer slows down (it ticks for the agent's whole life).
        #expect(offerer.agent.configuration.pacingMilliseconds < IceAgent.idlePacing)
        let slowed = ContinuousClock.now + .seconds(2)
        while offerer.agent.pacing != IceAgent.idlePacing, ContinuousClock.now < slowed {
            try await Task.sleep(for: .milliseconds(5))  // the ready state may still be on its way
        }
        #expect(offerer.agent.pacing == IceAgent.idlePacing && answerer.agent.pacing == IceAgent.idlePacing)
        try offerer.agent.restart()
        #expect(offerer.agent.pacing == offerer.agent.configuration.pacingMilliseconds)
    }

    /// The selected pair can lag the state event by a moment.
    static func sendUntilSent(_ peer: IcePeer, _ data: [UInt8]) async -> Bool {
        for _ in 0..<100 {
            if peer.agent.send(data) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// A failed agent is parked (`IceAgent.park`, which keeps libnice from
    /// aborting the process on a check that succeeds after its failure): it
    /// reports the failure, leaves FAILED at once, keeps the peer's candidates
    /// and checks them again, and connects when the peer answers. Here A
    /// checks B with a ufrag B does not know until its only pair fails; then
    /// A learns B's real credentials, and A's own checks find B (B never
    /// learns A's candidate: it answers only).
    @Test func aFailedAgentKeepsCheckingThePeersCandidates() async throws {
        let a = try IcePeer(controlling: true) { $0.checkRetransmissions = 3 }
        let b = try IcePeer(controlling: false)
        defer {
            a.agent.close()
            b.agent.close()
        }
        let aLog = EventLog(a.events)
        let bLog = EventLog(b.events)
        let (aUfrag, aPwd) = a.agent.localCredentials
        let (bUfrag, bPwd) = b.agent.localCredentials
        a.agent.setRemoteCredentials(ufrag: "x" + bUfrag, pwd: bPwd)
        b.agent.setRemoteCredentials(ufrag: aUfrag, pwd: aPwd)
        try a.agent.gather()
        try b.agent.gather()
        #expect(await eventually(within: .seconds(5)) { bLog.candidate != nil })
        let bCandidate = try #require(bLog.candidate)
        try a.agent.addRemoteCandidate(bCandidate)
        a.agent.remoteCandidatesComplete()
        #expect(await eventually(within: .seconds(15)) { aLog.states.contains(.failed) })
        // Parked: out of FAILED at once, and checking B's candidate again.
        #expect(await eventually(within: .seconds(2)) { aLog.states.last == .checking })
        a.agent.setRemoteCredentials(ufrag: bUfrag, pwd: bPwd)
        #expect(
            await eventually(within: .seconds(15)) {
                aLog.states.contains(.completed) && bLog.states.contains(.connected)
            })
        #expect(await Self.sendUntilSent(a, Array("back".utf8)))
    }

    /// Checks last: a path that carries nothing for the first 5 s (a NAT
    /// hole that opens late, a relay's permission that comes late) is still
    /// found by the checks that follow, where libnice's own schedule
    /// (3 sends, failed at 2 s) had given the pair up.
    @Test func aPathThatOpensLateIsStillFound() async throws {
        let relay = try UdpRelay()
        defer { relay.stop() }
        let a = try IcePeer(controlling: true)
        let b = try IcePeer(controlling: false)
        defer {
            a.agent.close()
            b.agent.close()
        }
        let aLog = EventLog(a.events)
        let bLog = EventLog(b.events)
        IcePeer.introduce(a, b)
        relay.blackout(for: 5)
        let started = ContinuousClock.now
        try a.agent.gather()
        try b.agent.gather()
        #expect(await eventually(within: .seconds(5)) { aLog.candidate != nil && bLog.candidate != nil })
        try a.agent.addRemoteCandidate(relay.rewrite(try #require(bLog.candidate), from: .b))
        try b.agent.addRemoteCandidate(relay.rewrite(try #require(aLog.candidate), from: .a))
        #expect(
            await eventually(within: .seconds(20)) {
                aLog.states.contains(.completed) && bLog.states.contains(.connected)
            })
        #expect(!aLog.states.contains(.failed) && !bLog.states.contains(.failed))
        #expect(ContinuousClock.now - started > .seconds(5))
        #expect(await Self.sendUntilSent(a, Array("late".utf8)))
    }

    /// Direct over relayed: while the direct path carries nothing (its NAT
    /// holes not open yet), the relayed pair through coturn carries the
    /// connection; when the direct pair's checks get through, it takes over,
    /// on both sides.
    @Test func aDirectPairThatWorksLaterTakesOverFromTheRelay() async throws {
        let turn = try await CoturnServer()
        defer { Task { await turn.stop() } }
        let (user, password) = turn.credentials()
        let relay = try UdpRelay()
        defer { relay.stop() }
        let server = IceConfiguration.TurnServer(host: "127.0.0.1", port: turn.port, username: user, password: password)
        let a = try IcePeer(controlling: true) { $0.turnServers = [server] }
        let b = try IcePeer(controlling: false) { $0.turnServers = [server] }
        defer {
            a.agent.close()
            b.agent.close()
        }
        let aPairs = EventLog(a.events)
        let bPairs = EventLog(b.events)
        IcePeer.introduce(a, b)
        relay.blackout(for: 4)
        try a.agent.gather()
        try b.agent.gather()
        // Host candidates go through the relay (the direct path); relay candidates as they are.
        #expect(await eventually(within: .seconds(5)) { aPairs.gathered.count >= 2 && bPairs.gathered.count >= 2 })
        func direct(_ line: String, from side: UdpRelay.Side) -> String {
            line.contains("typ host") ? relay.rewrite(line, from: side) : line
        }
        for line in bPairs.gathered { try a.agent.addRemoteCandidate(direct(line, from: .b)) }
        for line in aPairs.gathered { try b.agent.addRemoteCandidate(direct(line, from: .a)) }
        #expect(
            await eventually(within: .seconds(4)) {
                aPairs.selected.first?.contains { $0.contains("typ relay") } == true
            }, "a: \(aPairs.selected)")
        #expect(
            await eventually(within: .seconds(15)) {
                (aPairs.selected.last?.allSatisfy { !$0.contains("typ relay") } ?? false)
                    && (bPairs.selected.last?.allSatisfy { !$0.contains("typ relay") } ?? false)
            }, "a: \(aPairs.selected), b: \(bPairs.selected)")
        #expect(await Self.sendUntilSent(a, Array("direct".utf8)))
        // Stopped here, awaited: the deferred task alone (for a test that throws early) may not run
        // before the test process exits, and left a coturn running after every make test.
        await turn.stop()
    }

    /// Which selected pairs count as a path inside this machine (where a
    /// data channel may probe for large packets).
    @Test func localPathsAreLoopbackOrOurOwnAddress() {
        #expect(IceAgent.isLocalPath(local: "127.0.0.1", localIsHost: true, remote: "127.0.0.1"))
        #expect(IceAgent.isLocalPath(local: "::1", localIsHost: true, remote: "::1"))
        // A TURN relay on loopback, facing a peer on loopback.
        #expect(IceAgent.isLocalPath(local: "127.0.0.1", localIsHost: false, remote: "127.0.0.1"))
        // Two processes on one machine that gathered its LAN address.
        #expect(IceAgent.isLocalPath(local: "192.168.1.7", localIsHost: true, remote: "192.168.1.7"))
        #expect(IceAgent.isLocalPath(local: "fd00::7", localIsHost: true, remote: "fd00::7"))
        // Another machine, another container, or one public address behind a NAT (server reflexive).
        #expect(!IceAgent.isLocalPath(local: "192.168.1.7", localIsHost: true, remote: "192.168.1.8"))
        #expect(!IceAgent.isLocalPath(local: "172.17.0.2", localIsHost: true, remote: "172.17.0.3"))
        #expect(!IceAgent.isLocalPath(local: "203.0.113.5", localIsHost: false, remote: "203.0.113.5"))
        #expect(!IceAgent.isLocalPath(local: "127.0.0.1", localIsHost: true, remote: "192.168.1.7"))
        #expect(!IceAgent.isLocalPath(local: "", localIsHost: true, remote: ""))
    }

    @Test func restartGivesNewCredentials() async throws {
        let peer = try IcePeer(controlling: true)
        defer { peer.agent.close() }
        let before = peer.agent.localCredentials
        try peer.agent.restart()
        let after = peer.agent.localCredentials
        #expect(before.ufrag != after.ufrag && before.pwd != after.pwd)
    }

    @Test func badInputIsAClearError() throws {
        #expect(throws: IceAgent.IceError.self) {
            try IcePeer(controlling: true) { $0.localAddresses = ["not-an-ip"] }
        }
        let peer = try IcePeer(controlling: false)
        defer { peer.agent.close() }
        #expect(throws: IceAgent.IceError.self) { try peer.agent.addRemoteCandidate("candidate:garbage") }
        #expect(!peer.agent.send([1, 2, 3]))
    }
}

/// What an agent reported, collected as it comes (for tests that wait on
/// state, not on one event): its states, the candidates it gathered, the
/// pairs it selected, and the allocations its TURN servers dropped.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seenStates: [IceState] = []
    private var candidates: [String] = []
    private var pairs: [[String]] = []
    private var losses = 0
    private var task: Task<Void, Never>?

    init(_ events: AsyncStream<IceEvent>) {
        task = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                self.lock.withLock {
                    switch event {
                    case .stateChanged(let state): self.seenStates.append(state)
                    case .localCandidate(let line): self.candidates.append(line)
                    case .selectedPair(let local, let remote): self.pairs.append([local, remote])
                    case .relayLost: self.losses += 1
                    case .gatheringComplete: break
                    }
                }
            }
        }
    }

    deinit { task?.cancel() }

    var states: [IceState] { lock.withLock { seenStates } }
    var candidate: String? { lock.withLock { candidates.first } }
    var gathered: [String] { lock.withLock { candidates } }
    var relays: [String] { gathered.filter { $0.contains("typ relay") } }
    var selected: [[String]] { lock.withLock { pairs } }
    var lost: Int { lock.withLock { losses } }

    /// Gives each side's relay candidates to the other as they come, until cancelled.
    static func trickleRelays(_ aLog: EventLog, to a: IcePeer, _ bLog: EventLog, to b: IcePeer) -> Task<Void, Never> {
        Task {
            var given: [Set<String>] = [[], []]
            while !Task.isCancelled {
                for (index, (from, to)) in [(aLog, b), (bLog, a)].enumerated() {
                    for line in from.relays where !given[index].contains(line) {
                        given[index].insert(line)
                        try? to.agent.addRemoteCandidate(line)
                    }
                }
                try? await Task.sleep(for: .milliseconds(20))  // polling the logs, bounded by the tests' waits
            }
        }
    }
}

/// libnice emits some signals on the thread that called it, not on the GLib
/// thread: a state change inside gathering, or inside adding a remote
/// candidate once the peer's checks have connected us (a peer-reflexive
/// pair, when signaling is slower than the checks). A handler that called
/// back into the agent there (the DTLS layer sends its held flight on
/// connected) deadlocked on the agent's own lock, and the process hung
/// (seen with Chromium under load, about 1 run in 10; here, at gathering).
@Suite struct IceReentrancyTests {
    final class Box: @unchecked Sendable {
        let lock = NSLock()
        var agent: IceAgent?
        var states: [IceState] = []
        var candidates: [String] = []
    }

    /// Runs `body` on a thread of its own: false if it has not returned within 5 s
    /// (a deadlock shows as a failure, not as a hung test run).
    private func returns(_ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            body()
            done.signal()
        }
        return done.wait(timeout: .now() + 5) == .success
    }

    @Test func aHandlerMayCallTheAgentFromASignalEmittedInsideOurCall() async throws {
        let a = try IcePeer(controlling: true)
        let box = Box()
        var configuration = IceConfiguration(controlling: false)
        configuration.localAddresses = ["127.0.0.1"]
        let b = try IceAgent(
            configuration: configuration,
            onEvent: { event in
                switch event {
                case .stateChanged(let state):
                    let agent = box.lock.withLock {
                        box.states.append(state)
                        return box.agent
                    }
                    _ = agent?.send([0])  // back into the agent, from whatever thread this is
                case .localCandidate(let line):
                    box.lock.withLock { box.candidates.append(line) }
                default:
                    break
                }
            }, onPacket: { _ in })
        box.lock.withLock { box.agent = b }
        let aLog = EventLog(a.events)
        let (aUfrag, aPwd) = a.agent.localCredentials
        let (bUfrag, bPwd) = b.localCredentials
        a.agent.setRemoteCredentials(ufrag: bUfrag, pwd: bPwd)
        b.setRemoteCredentials(ufrag: aUfrag, pwd: aPwd)
        try a.agent.gather()
        // The agent's lock is held for good after a deadlock: then nothing is closed (it would hang too).
        guard returns({ try? b.gather() }) else {
            Issue.record("gather did not return: the handler's call into the agent deadlocked")
            return
        }
        // A knows B's candidates; B learns of A only from A's checks (peer-reflexive), then late.
        #expect(await eventually(within: .seconds(5)) { !box.lock.withLock { box.candidates }.isEmpty })
        for line in box.lock.withLock({ box.candidates }) { try a.agent.addRemoteCandidate(line) }
        #expect(
            await eventually(within: .seconds(10)) {
                box.lock.withLock { box.states.contains(.connected) || box.states.contains(.completed) }
            })
        let aCandidate = try #require(aLog.candidate)
        guard returns({ try? b.addRemoteCandidate(aCandidate) }) else {
            Issue.record("addRemoteCandidate did not return: the handler's call into the agent deadlocked")
            return
        }
        a.agent.close()
        b.close()
    }
}
