import Testing

@testable import CarrierNode

/// When a friend someone waits for has its toxcore link started afresh, on virtual time.
@Suite struct FriendLinkRefreshTests {
    let start = ContinuousClock.now
    let friend: UserId
    let other: UserId
    let third: UserId

    init() throws {
        friend = try #require(UserId(publicKey: [UInt8](repeating: 1, count: 32)))
        other = try #require(UserId(publicKey: [UInt8](repeating: 2, count: 32)))
        third = try #require(UserId(publicKey: [UInt8](repeating: 3, count: 32)))
    }

    func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    /// Second by second from `from` to `to`: when each refresh came, and the wait it reported.
    func run(
        _ refresh: inout FriendLinkRefresh, from: Int, to: Int, awaited: Set<UserId>,
        online: (Int) -> Bool = { _ in true }
    ) -> [(second: Int, friend: UserId, waited: Duration)] {
        var taken: [(Int, UserId, Duration)] = []
        for second in from...to {
            for due in refresh.due(awaited: awaited, online: online(second), now: at(second)) {
                taken.append((second, due.friend, due.waited))
            }
        }
        return taken
    }

    @Test func aFriendWaitedForIsRefreshedAfter20sThenAtDoublingIntervals() {
        var refresh = FriendLinkRefresh()
        let taken = run(&refresh, from: 0, to: 1000, awaited: [friend])
        #expect(taken.map(\.second) == [20, 60, 140, 300, 600, 900])  // 20, 40, 80, 160, then 300 s at most
        #expect(taken.map(\.waited) == [20, 60, 140, 300, 600, 900].map { Duration.seconds($0) })
    }

    @Test func aFriendThatCameOnlineOrIsNoLongerAwaitedStartsAgainFromZero() {
        var refresh = FriendLinkRefresh()
        #expect(run(&refresh, from: 0, to: 25, awaited: [friend]).map(\.second) == [20])
        #expect(run(&refresh, from: 26, to: 29, awaited: []).isEmpty)  // online, or the wait ended
        #expect(run(&refresh, from: 30, to: 60, awaited: [friend]).map(\.second) == [50])
    }

    @Test func offTheNetworkTheClockStopsAndStartsAgainOnReturn() {
        var refresh = FriendLinkRefresh()
        let taken = run(&refresh, from: 0, to: 60, awaited: [friend]) { !(10..<30).contains($0) }
        #expect(taken.map(\.second) == [50])
        #expect(taken.first?.waited == .seconds(20))
    }

    @Test func friendsAreTimedApartAndTheFirstWaitCanBeSet() {
        var refresh = FriendLinkRefresh(after: .seconds(2))
        var taken = run(&refresh, from: 0, to: 4, awaited: [friend])
        taken += run(&refresh, from: 5, to: 8, awaited: [friend, other])
        #expect(
            taken.map { "\($0.second) \($0.friend == friend ? "friend" : "other")" } == [
                "2 friend", "6 friend", "7 other",
            ])
    }

    @Test func aFriendThatLeftIsStartedAfreshOnceAfter5sUnlessItCameBackOrWeWereOff() {
        var refresh = FriendLinkRefresh()
        refresh.friendConnection(friend, up: false, online: true, now: at(0))
        refresh.friendConnection(other, up: false, online: true, now: at(1))
        refresh.friendConnection(other, up: true, online: true, now: at(3))  // back within 5 s: keeps its link
        refresh.friendConnection(third, up: false, online: false, now: at(3))  // lost while this node was off
        var due: [FriendLinkRefresh.Due] = []
        for second in 0...30 { due += refresh.due(awaited: [], online: true, now: at(second)) }
        #expect(due == [FriendLinkRefresh.Due(friend: friend, waited: .seconds(5), left: true)])
    }

    @Test func aFriendThatLeftAndIsWaitedForIsStartedAfreshOnceAtATime() {
        var refresh = FriendLinkRefresh(after: .seconds(5))
        _ = refresh.due(awaited: [friend], online: true, now: at(0))
        refresh.friendConnection(friend, up: false, online: true, now: at(0))
        let due = refresh.due(awaited: [friend], online: true, now: at(5))
        #expect(due.map(\.friend) == [friend] && due.first?.left == true)
    }
}
