import RtcCalls
import Testing

/// ICE restarts after a loss: when they are due, when the session gives up, what is measured.
@Suite struct ConnectionRecoveryTests {
    @Test func restartsComeAtOnceThenAfterOneAndThreeSecondsThenEveryTwo() {
        var recovery = ConnectionRecovery()
        var restarts: [Double] = []
        if recovery.lost(now: 100) == [.restartIce] { restarts.append(0) }
        for tenth in 1...95 {
            let now = 100 + Double(tenth) / 10
            if recovery.tick(now: now) == [.restartIce] { restarts.append(now - 100) }
        }
        #expect(restarts.map { ($0 * 10).rounded() / 10 } == [0, 1, 3, 5, 7, 9])
        #expect(recovery.restartsMade == 6 && recovery.isRecovering)
    }

    @Test func theSessionGivesUpWhenTheWindowHasPassed() {
        var recovery = ConnectionRecovery(policy: .init(window: 5, restarts: [0]))
        _ = recovery.lost(now: 0)
        #expect(recovery.tick(now: 4.9) == [.restartIce] || recovery.tick(now: 4.9).isEmpty)
        #expect(recovery.tick(now: 5) == [.giveUp(afterSeconds: 5)])
    }

    @Test func aRestorationEndsTheOutageAndALaterLossStartsAfresh() {
        var recovery = ConnectionRecovery()
        _ = recovery.lost(now: 10)
        _ = recovery.tick(now: 11)
        recovery.restored(now: 12.5)
        #expect(!recovery.isRecovering && recovery.lastOutage == 2.5)
        #expect(recovery.tick(now: 50).isEmpty)
        #expect(recovery.lost(now: 60) == [.restartIce])  // a new loss: the first restart at once again
        recovery.restored(now: 60.5)
        #expect(recovery.losses == 2 && recovery.longestOutage == 2.5 && recovery.lastOutage == 0.5)
    }

    @Test func thePoliteSideStartsASecondLater() {
        var recovery = ConnectionRecovery(policy: ConnectionRecovery.Policy().delayed(by: 1))
        #expect(recovery.lost(now: 0).isEmpty)
        #expect(recovery.tick(now: 0.9).isEmpty)
        #expect(recovery.tick(now: 1) == [.restartIce])
    }
}
