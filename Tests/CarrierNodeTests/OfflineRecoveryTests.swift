import Foundation
import Testing

@testable import CarrierNode

/// A node off the network asks its bootstrap nodes again (10 s after it lost
/// the network or started, then every 15 s), and
/// starts toxcore afresh 20 s in (then at doubling intervals up to 10
/// minutes); never while connected, and not while a friend's link says the
/// node reaches the network (up to 2 minutes).
@Suite struct OfflineRecoveryTests {
    let start = ContinuousClock.now

    /// Every step due in the first `seconds`, taking each as it comes.
    func steps(_ recovery: inout OfflineRecovery, upTo seconds: Int, from offset: Int = 0) -> [(
        Int, OfflineRecovery.Step
    )] {
        var taken: [(Int, OfflineRecovery.Step)] = []
        for second in offset...seconds {
            let now = start + .seconds(second)
            while let step = recovery.due(now: now) {
                taken.append((second, step))
                if step == .restart { recovery.restarted(now: now) }
            }
        }
        return taken
    }

    @Test func aNodeThatStaysOffAsksAgainThenStartsAfresh() {
        var recovery = OfflineRecovery(startedAt: start)
        let taken = steps(&recovery, upTo: 1000)
        let restarts = taken.filter { $0.1 == .restart }.map(\.0)
        let rebootstraps = taken.filter { $0.1 == .rebootstrap }.map(\.0)
        #expect(restarts == [20, 60, 140, 300, 620])  // +40, +80, +160, +320, then every 600
        // Asked again 10 s after the start and after each restart, every 15 s from there.
        #expect(Array(rebootstraps.prefix(5)) == [10, 30, 45, 70, 85])
        // However long it stays off, it never goes more than 15 s without asking
        // (a restart asks too): a bootstrap node back after an hour's outage is
        // asked within 15 s.
        let asked = (taken + steps(&recovery, upTo: 3600, from: 1001)).map(\.0)
        let gaps = zip(asked, asked.dropFirst()).map { $1 - $0 }
        #expect(gaps.max() == 15 && asked.last.map { $0 >= 3585 } == true, "\(gaps)")
    }

    @Test func aBootstrapNodeOnlyAsksAgainAndNeverStartsAfresh() {
        var recovery = OfflineRecovery(startedAt: start, restarts: false)
        let taken = steps(&recovery, upTo: 3600)
        #expect(!taken.isEmpty && taken.allSatisfy { $0.1 == .rebootstrap })
        var relay = CarrierOptions(bootstrapNodes: [BootstrapNode(host: "127.0.0.1", port: 33445, publicKey: [])])
        #expect(relay.restartsWhenOffline)
        relay.tcpRelayPort = 33445
        #expect(!relay.restartsWhenOffline)  // `carrier node`: others hold its port and DHT key
        #expect(!CarrierOptions().restartsWhenOffline)  // nobody for a fresh instance to ask
    }

    @Test func connectedNothingIsDueAndLosingTheNetworkStartsOver() {
        var recovery = OfflineRecovery(startedAt: start)
        #expect(recovery.due(now: start + .seconds(10)) == .rebootstrap)
        recovery.connectionChanged(connected: true, now: start + .seconds(12))
        #expect(recovery.nextStep == nil && recovery.offlineSince == nil)
        #expect(recovery.due(now: start + .seconds(5000)) == nil)
        recovery.connectionChanged(connected: false, now: start + .seconds(6000))
        #expect(recovery.offlineSince == start + .seconds(6000))
        #expect(recovery.due(now: start + .seconds(6009)) == nil)
        #expect(recovery.due(now: start + .seconds(6010)) == .rebootstrap)
        // A second loss while off does not push the restart back.
        recovery.connectionChanged(connected: false, now: start + .seconds(6015))
        #expect(recovery.offlineSince == start + .seconds(6000))
        #expect(recovery.due(now: start + .seconds(6019)) == nil)
        #expect(recovery.due(now: start + .seconds(6020)) == .restart)
        recovery.restarted(now: start + .seconds(6020))
        #expect(recovery.due(now: start + .seconds(6029)) == nil)
        #expect(recovery.due(now: start + .seconds(6030)) == .rebootstrap)
        #expect(recovery.due(now: start + .seconds(6060)) == .restart)
    }

    /// toxcore counting itself off for a while when it rebuilds its onion
    /// paths, while friends go on reaching the node: a restart waits while a
    /// friend's link is up or was within 30 s, and at most until the node has
    /// been off for 2 minutes.
    @Test func aFriendsLinkHoldsTheRestartForTwoMinutesAtMost() {
        /// The steps from second 100 to `end`, toxcore off from 100, with `change` applied at each second first.
        func run(until end: Int, _ change: (Int, inout OfflineRecovery) -> Void) -> [(Int, OfflineRecovery.Step)] {
            var recovery = OfflineRecovery(startedAt: start)
            recovery.connectionChanged(connected: true, now: start + .seconds(5))
            recovery.friendLinks(anyUp: true, now: start + .seconds(50))
            recovery.connectionChanged(connected: false, now: start + .seconds(100))
            var taken: [(Int, OfflineRecovery.Step)] = []
            for second in 100...end {
                change(second, &recovery)
                while let step = recovery.due(now: start + .seconds(second)) {
                    taken.append((second, step))
                    if step == .restart { recovery.restarted(now: start + .seconds(second)) }
                }
            }
            return taken
        }
        func restarts(_ taken: [(Int, OfflineRecovery.Step)]) -> [Int] { taken.filter { $0.1 == .restart }.map(\.0) }
        // Back on its own 25 s in: asked the bootstrap nodes again, never started afresh.
        let dip = run(until: 400) { second, recovery in
            if second == 125 { recovery.connectionChanged(connected: true, now: start + .seconds(second)) }
        }
        #expect(dip.map(\.0) == [110], "\(dip)")
        // The friend's link goes down 30 s in: the restart comes 30 s later.
        let unlinked = run(until: 170) { second, recovery in
            if second == 130 { recovery.friendLinks(anyUp: false, now: start + .seconds(second)) }
        }
        #expect(restarts(unlinked) == [160])
        // Linked throughout and off for good: started afresh 2 minutes in, and
        // after that on the usual schedule (the old instance's links are gone).
        let linked = run(until: 300) { second, recovery in
            if second == 230 { recovery.friendLinks(anyUp: true, now: start + .seconds(second)) }
        }
        #expect(restarts(linked) == [220, 260])
        // Without a friend's link, as before: 20 s in.
        var alone = OfflineRecovery(startedAt: start)
        #expect(restarts(steps(&alone, upTo: 30)) == [20])
    }

    /// The stretches off the network, as `reachability()` reports them.
    @Test func offlineStretchesAreCountedAfterTheNodeJoined() {
        var record = OfflineRecord(since: start)
        #expect(record.connectionChanged(connected: true, now: start + .seconds(8)) == nil)  // joining is no stretch
        #expect(record.connectionChanged(connected: false, now: start + .seconds(100)) == nil)
        #expect(record.currentSeconds(now: start + .seconds(130)) == 30)
        #expect(record.connectionChanged(connected: true, now: start + .milliseconds(172_500)) == 72.5)
        _ = record.connectionChanged(connected: false, now: start + .seconds(200))
        let report = record.report(now: start + .seconds(210), online: false, rebootstraps: 3, restarts: 1)
        #expect(report.timesOffline == 2 && report.offlineSeconds == 10)
        #expect(report.longestOfflineSeconds == 72.5 && report.totalOfflineSeconds == 82.5)
        #expect(report.rebootstraps == 3 && report.restarts == 1 && report.lastOffline != nil)
    }
}
