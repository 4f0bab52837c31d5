import Testing

@testable import CarrierNode

/// A node off the network asks its bootstrap nodes again: 10 s after it lost
/// the network or started, then at doubling intervals up to 5 minutes; never
/// while connected.
@Suite struct RebootstrapScheduleTests {
    let start = ContinuousClock.now

    @Test func aNodeThatNeverJoinsAsksAgainAtDoublingIntervals() {
        var schedule = RebootstrapSchedule(startedAt: start)
        var attempts: [Int] = []
        for second in 0...1000 where schedule.isDue(now: start + .seconds(second)) { attempts.append(second) }
        #expect(attempts == [10, 30, 70, 150, 310, 610, 910])  // +20, +40, +80, +160, then every 300
    }

    @Test func connectedItNeverAsksAndLosingTheNetworkStartsOver() {
        var schedule = RebootstrapSchedule(startedAt: start)
        var due = schedule.isDue(now: start + .seconds(10))
        #expect(due)
        schedule.connectionChanged(connected: true, now: start + .seconds(12))
        #expect(schedule.nextAttempt == nil)
        due = schedule.isDue(now: start + .seconds(5000))
        #expect(!due)
        schedule.connectionChanged(connected: false, now: start + .seconds(6000))
        due = schedule.isDue(now: start + .seconds(6009))
        #expect(!due)
        due = schedule.isDue(now: start + .seconds(6010))
        #expect(due)
        due = schedule.isDue(now: start + .seconds(6029))
        #expect(!due)
        due = schedule.isDue(now: start + .seconds(6030))
        #expect(due)
    }
}
