import Foundation
import TestSupport
import Testing

@testable import RtcICE

/// A TURN server that goes away under a relayed connection: every
/// allocation is gone, and the bridge says so (the server's port unreachable
/// over UDP, the connection closed over TCP), where libnice says nothing.
@Suite(.serialized) struct TurnBridgeTests {
    @Test(arguments: [IceConfiguration.TurnServer.Transport.udp, .tcp])
    func aServerThatGoesAwayIsReportedAsALostAllocation(
        _ transport: IceConfiguration.TurnServer.Transport
    ) async throws {
        let turn = try await CoturnServer()
        let (user, password) = turn.credentials()
        let server = IceConfiguration.TurnServer(
            host: "127.0.0.1", port: turn.port, username: user, password: password, transport: transport)
        let a = try IcePeer(controlling: true) {
            $0.turnServers = [server]
            $0.relayOnly = true
        }
        let b = try IcePeer(controlling: false) {
            $0.turnServers = [server]
            $0.relayOnly = true
        }
        defer {
            a.agent.close()
            b.agent.close()
        }
        let aLog = BridgeLog(a.events)
        let bLog = BridgeLog(b.events)
        let (aUfrag, aPwd) = a.agent.localCredentials
        let (bUfrag, bPwd) = b.agent.localCredentials
        a.agent.setRemoteCredentials(ufrag: bUfrag, pwd: bPwd)
        b.agent.setRemoteCredentials(ufrag: aUfrag, pwd: aPwd)
        try a.agent.gather()
        try b.agent.gather()
        // Every relay candidate each side gathers goes to the other, now and after the restart.
        let exchange = Task {
            var given: [Set<String>] = [[], []]
            while !Task.isCancelled {
                for (index, (from, to)) in [(aLog, b), (bLog, a)].enumerated() {
                    for line in from.relays where !given[index].contains(line) {
                        given[index].insert(line)
                        try? to.agent.addRemoteCandidate(line)
                    }
                }
                try? await Task.sleep(for: .milliseconds(20))  // polling the logs, bounded by the waits below
            }
        }
        defer { exchange.cancel() }
        #expect(await eventually(within: .seconds(10)) { aLog.selected > 0 && bLog.selected > 0 })
        #expect(await IceAgentTests.sendUntilSent(a, Array("before".utf8)))

        await turn.stop()
        // Traffic while the server is away: over UDP its port answers unreachable.
        #expect(
            await eventually(within: .seconds(10)) {
                a.agent.send(Array("ping".utf8))
                b.agent.send(Array("ping".utf8))
                return aLog.lost > 0 && bLog.lost > 0
            }, "a lost \(aLog.lost), b lost \(bLog.lost)")
        // Once each: the lost connection's later errors say nothing new.
        #expect(aLog.lost == 1 && bLog.lost == 1, "a lost \(aLog.lost), b lost \(bLog.lost)")
    }
}

/// What a bridge test watches: relay candidates, pairs selected, allocations lost.
final class BridgeLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private var selections = 0
    private var losses = 0
    private var task: Task<Void, Never>?

    init(_ events: AsyncStream<IceEvent>) {
        task = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                self.lock.withLock {
                    switch event {
                    case .localCandidate(let line) where line.contains("typ relay"): self.lines.append(line)
                    case .selectedPair: self.selections += 1
                    case .relayLost: self.losses += 1
                    default: break
                    }
                }
            }
        }
    }

    deinit { task?.cancel() }

    var relays: [String] { lock.withLock { lines } }
    var selected: Int { lock.withLock { selections } }
    var lost: Int { lock.withLock { losses } }
}
