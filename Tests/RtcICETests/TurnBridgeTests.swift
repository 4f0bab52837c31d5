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
        let peers = try RelayOnlyPeers([server])
        defer { peers.close() }
        let (a, b, aLog, bLog) = (peers.a, peers.b, peers.aLog, peers.bLog)
        #expect(await eventually(within: .seconds(10)) { !aLog.selected.isEmpty && !bLog.selected.isEmpty })
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

/// Two TURN servers, and the one the connection's pair runs through goes
/// away: the pair through the other takes over within seconds.
@Suite(.serialized) struct TwoTurnServersTests {
    @Test func whenTheRelayInUseGoesTheOtherServerCarriesTheConnection() async throws {
        let first = try await CoturnServer()
        let second = try await CoturnServer(relayAddress: "127.0.0.2")
        let servers = [first, second].map { turn in
            let (user, password) = turn.credentials()
            return IceConfiguration.TurnServer(host: "127.0.0.1", port: turn.port, username: user, password: password)
        }
        let peers = try RelayOnlyPeers(servers)
        defer { peers.close() }
        let (a, b, aLog, bLog) = (peers.a, peers.b, peers.aLog, peers.bLog)
        #expect(await eventually(within: .seconds(10)) { a.agent.selectedPair != nil && !bLog.selected.isEmpty })
        // The first server relays from 127.0.0.1, the second from 127.0.0.2.
        let ports = [first.port, second.port]
        let server: @Sendable (String?) -> UInt16? = { line in
            let words = line?.split(separator: " ") ?? []
            guard words.count > 5 else { return nil }
            return words[4] == "127.0.0.2" ? ports[1] : words[4] == "127.0.0.1" ? ports[0] : nil
        }
        let inUse = try #require(server(a.agent.selectedPair?.local))
        let (gone, other) = inUse == first.port ? (first, second) : (second, first)
        let otherPort = other.port
        await gone.stop()
        let arrived = Arrival()
        let reader = Task {
            for await packet in b.packets where packet == Array("after".utf8) { return arrived.mark() }
        }
        defer { reader.cancel() }
        let started = ContinuousClock.now
        #expect(
            await eventually(within: .seconds(10)) {
                a.agent.send(Array("after".utf8))
                return arrived.happened && server(a.agent.selectedPair?.local) == otherPort
            },
            "pair: \(String(describing: a.agent.selectedPair)), servers \(first.port) \(second.port), lost a \(aLog.lost) b \(bLog.lost), arrived \(arrived.happened), relays \(aLog.relays)"
        )
        print("the other TURN server carried the connection \(ContinuousClock.now - started) after the first went")
        await other.stop()
    }
}

/// Whether something arrived, set from a reading task.
final class Arrival: @unchecked Sendable {
    private let lock = NSLock()
    private var seen = false
    func mark() { lock.withLock { seen = true } }
    var happened: Bool { lock.withLock { seen } }
}

/// Two agents (the first controlling) that gather relay candidates only,
/// from `servers`, with their logs; their credentials and relay candidates
/// go to each other as they come.
final class RelayOnlyPeers: Sendable {
    let a: IcePeer
    let b: IcePeer
    let aLog: EventLog
    let bLog: EventLog
    private let exchange: Task<Void, Never>

    init(_ servers: [IceConfiguration.TurnServer]) throws {
        let configure = { (configuration: inout IceConfiguration) in
            configuration.turnServers = servers
            configuration.relayOnly = true
        }
        a = try IcePeer(controlling: true, configure: configure)
        b = try IcePeer(controlling: false, configure: configure)
        aLog = EventLog(a.events)
        bLog = EventLog(b.events)
        IcePeer.introduce(a, b)
        try a.agent.gather()
        try b.agent.gather()
        exchange = EventLog.trickleRelays(aLog, to: a, bLog, to: b)
    }

    func close() {
        exchange.cancel()
        a.agent.close()
        b.agent.close()
    }
}
