import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// The bootstrap node of a private network stops (killed) and comes back
/// with the same key and port (c-toxcore's `tox-bootstrapd`, see
/// `ToxBootstrapDaemon`). A node left alone must say it is off the network,
/// although toxcore, talking to its own address, goes on calling itself
/// connected (`IsolationCheck`); and it must be back on, and reachable by a
/// newcomer, within 30 s of the bootstrap node's return (`OfflineRecovery`).
@Suite(.serialized, .timeLimit(.minutes(4))) struct BootstrapRestartTests {
    static func node(_ name: String, root: String, entry: BootstrapNode) throws -> Carrier {
        var options = CarrierOptions(dataDirectory: root + "/" + name, bootstrapNodes: [entry])
        options.loopbackOnly = true
        options.carrierFraming = false  // tox-bootstrapd speaks stock toxcore
        options.aloneAfter = .seconds(20)  // 60 s in use; shorter here to keep the suite quick
        return try Carrier(options: options)
    }

    @Test func aNodeAloneSaysSoAndIsBackWithin30sOfTheBootstrapNodesReturn() async throws {
        let daemon = try await ToxBootstrapDaemon()
        let entry = try BootstrapNode(parsing: daemon.entry)
        let root = temporaryDirectory("carrier-bootstrap-restart")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let bot = try Self.node("bot", root: root, entry: entry)
        try await bot.start()
        #expect(await bot.waitUntilReady(timeout: .seconds(60)), "did not join through tox-bootstrapd")
        let events = await bot.events()

        await daemon.kill()
        let lost = await events.first(within: .seconds(90)) { event -> Bool? in
            if case .connection(connected: false) = event { return true }
            return nil
        }
        #expect(lost == true, "still 'online' with nobody else on the network")
        #expect(await bot.reachability().online == false)
        // Off long enough for recovery to have started toxcore afresh (20 s in):
        // its peer lists are empty then, and only asking the bootstrap node brings it back.
        let restarted = await events.first(within: .seconds(40)) { event -> Bool? in
            if case .toxRestarted = event { return true }
            return nil
        }
        #expect(restarted == true)

        try await daemon.start()
        let returned = ContinuousClock.now
        let back = await events.first(within: .seconds(30)) { event -> Bool? in
            if case .connection(connected: true) = event { return true }
            return nil
        }
        #expect(back == true, "not back on the network within 30 s of the bootstrap node's return")
        let backAfter = ContinuousClock.now - returned
        let report = await bot.reachability()
        #expect(report.online && report.timesOffline == 1 && report.restarts >= 1, "\(report)")

        // Back on, and findable: a newcomer joining through the bootstrap node befriends it.
        let newcomer = try Self.node("newcomer", root: root, entry: entry)
        try await newcomer.start()
        #expect(await newcomer.waitUntilReady(timeout: .seconds(60)))
        try await TestNetwork.befriend(newcomer, bot)
        print("bootstrap restart: the node was back on \(backAfter) after the bootstrap node's return; befriended")
        await newcomer.stop()
        await bot.stop()
        await daemon.kill()
    }
}
