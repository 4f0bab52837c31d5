import CShimToxcore
import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// Nodes speak the Carrier network's framing under toxcore by default (the
/// magic on every datagram and TCP relay frame), on a local network of their own:
/// they find each other over UDP and over the bootstrap's TCP relay, and
/// what they send carries the magic (seen on a raw socket).
@Suite(.serialized, .timeLimit(.minutes(5))) struct CarrierFramingNodeTests {
    static func framed(_ options: inout CarrierOptions) {
        options.loopbackOnly = true
        options.carrierFraming = true
    }

    /// What a framed node sends starts with the magic; an unframed one's does not.
    @Test func aFramedNodesDatagramsCarryTheMagic() async throws {
        for framing in [true, false] {
            let raw = try LoopbackUdpSocket()
            var options = CarrierOptions()
            options.loopbackOnly = true
            options.carrierFraming = framing
            options.bootstrapNodes = [
                BootstrapNode(host: "127.0.0.1", port: raw.port, publicKey: [UInt8](repeating: 9, count: 32))
            ]
            let node = try Carrier(options: options)
            try await node.start()
            #expect(raw.waitReadable(timeout: .seconds(20)), "no datagram from the node")
            let datagram = raw.receive()
            #expect(Array(datagram.prefix(4)) == [0x69, 0x76, 0x65, 0x67] || !framing)
            #expect(Array(datagram.prefix(4)) != [0x69, 0x76, 0x65, 0x67] || framing)
            await node.stop()
        }
    }

    /// Nor do we reach stock toxcore: beside c-toxcore's own bootstrap daemon
    /// a stock node joins and a framed one, started with it, does not.
    @Test func aFramedNodeCannotJoinThroughStockToxcore() async throws {
        let daemon = try await ToxBootstrapDaemon()
        let entry = try BootstrapNode(parsing: daemon.entry)
        var stockOptions = CarrierOptions(bootstrapNodes: [entry])
        stockOptions.loopbackOnly = true
        stockOptions.carrierFraming = false
        var framedOptions = stockOptions
        framedOptions.carrierFraming = true
        let stock = try Carrier(options: stockOptions)
        let framed = try Carrier(options: framedOptions)
        try await stock.start()
        try await framed.start()
        #expect(await stock.waitUntilReady(timeout: .seconds(60)), "a stock node did not join tox-bootstrapd")
        // What is under test is an absence: 5 s more than the stock node took.
        #expect(await framed.waitUntilReady(timeout: .seconds(5)) == false)
        #expect(await framed.reachability().online == false)
        await stock.stop()
        await framed.stop()
        await daemon.kill()
    }

    /// A bootstrap and two peers, all framed, one of them over TCP only:
    /// friends, a message and a bulk message with their receipts, both ways
    /// through the relay; an unframed node's datagrams are dropped.
    @Test func framedNodesBefriendAndMessageOverUdpAndTheRelay() async throws {
        let root = NSTemporaryDirectory() + "carrier-framed-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        var bootstrapOptions = CarrierOptions()
        Self.framed(&bootstrapOptions)
        // The relay on the DHT port, as a Carrier bootstrap runs it: the entry names one port.
        let port = try FreePort.tcp()
        bootstrapOptions.tcpRelayPort = port
        bootstrapOptions.udpPorts = port...port
        let bootstrap = try Carrier(options: bootstrapOptions)
        let entry = try #require(await bootstrap.bootstrapEntry())
        try await bootstrap.start()
        let alice = try TestNetwork.peer("alice", root: root, entry: entry, adjust: Self.framed)
        let bob = try TestNetwork.peer("bob", root: root, entry: entry) { options in
            Self.framed(&options)
            options.udpEnabled = false  // through the bootstrap's TCP relay only
        }
        for node in [alice, bob] { try await node.start() }
        for node in [alice, bob] {
            #expect(await node.waitUntilReady(timeout: .seconds(40)), "\(node.userId) not ready")
        }
        try await TestNetwork.befriend(alice, bob)

        let inbox = await bob.events()
        let aliceId = alice.userId
        let text = Array("over the Carrier framing".utf8)
        let bulk = randomBytes(20_000)
        async let arrived = inbox.first(within: .seconds(60)) { event -> Int? in
            if case .message(let from, nil, let data, _, _) = event, from == aliceId, data == bulk { return data.count }
            return nil
        }
        #expect(try await alice.deliverMessage(text, to: bob.userId.description) == .delivered)
        #expect(try await alice.deliverMessage(bulk, to: bob.userId.description) == .delivered)
        #expect(await arrived == bulk.count)
        #expect(try await bob.deliverMessage(text, to: aliceId.description) == .delivered)
        let stats = cshim_framing_stats_get()
        #expect(stats.datagrams_sent > 0 && stats.datagrams_received > 0)
        #expect(stats.frames_sent > 0 && stats.frames_received > 0, "nothing went through the TCP relay framed")

        // A node without the framing: the framed bootstrap drops what it sends.
        let dropped = stats.datagrams_dropped
        var plain = CarrierOptions()
        plain.loopbackOnly = true
        plain.carrierFraming = false
        plain.bootstrapNodes = [entry]
        let stranger = try Carrier(options: plain)
        try await stranger.start()
        #expect(await eventually(within: .seconds(20)) { cshim_framing_stats_get().datagrams_dropped > dropped })
        for node in [stranger, alice, bob, bootstrap] { await node.stop() }
    }
}
