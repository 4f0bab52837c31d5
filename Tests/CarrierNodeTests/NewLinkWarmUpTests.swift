import Testing

@testable import CarrierNode

/// Hints and the start of files on a new loopback link, on virtual time.
@Suite struct NewLinkWarmUpTests {
    let start = ContinuousClock.now
    let friend: UserId
    let other: UserId

    init() throws {
        friend = try #require(UserId(publicKey: [UInt8](repeating: 1, count: 32)))
        other = try #require(UserId(publicKey: [UInt8](repeating: 2, count: 32)))
    }

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test func aWaitingFileSendsOneHintAndTheFriendAnswersWithItsOwn() {
        var sender = NewLinkWarmUp()
        var receiver = NewLinkWarmUp()
        sender.link(friend, up: true, now: at(0))
        receiver.link(other, up: true, now: at(5))
        #expect(sender.fileWaits(for: friend) == [.sendHint])
        #expect(sender.fileWaits(for: friend) == [])
        // The receiver asks the sender's node and answers; the sender only asks.
        #expect(receiver.hint(from: other) == [.askFriendsNode, .sendHint])
        #expect(receiver.hint(from: other) == [])
        #expect(sender.hint(from: friend) == [.askFriendsNode])
        #expect(sender.hint(from: friend) == [])
        // A change of path (TCP to UDP) is not a new link.
        sender.link(friend, up: true, now: at(80))
        #expect(sender.fileWaits(for: friend) == [])
    }

    @Test func aLinkWithoutFilesSendsNoHint() {
        var warmUp = NewLinkWarmUp()
        warmUp.link(friend, up: true, now: at(0))
        #expect(warmUp.due(now: at(1000)) == [friend])
        #expect(warmUp.fileWaits(for: other) == [])
    }

    @Test func filesStartWhenTheLinkIsASecondOldOnce() {
        var warmUp = NewLinkWarmUp()
        warmUp.link(friend, up: true, now: at(0))
        warmUp.link(other, up: true, now: at(400))
        #expect(!warmUp.filesMayStart(friend, now: at(999)))
        #expect(warmUp.due(now: at(999)) == [])
        #expect(warmUp.filesMayStart(friend, now: at(1000)))
        #expect(warmUp.due(now: at(1000)) == [friend])
        #expect(warmUp.due(now: at(1200)) == [])
        #expect(!warmUp.filesMayStart(other, now: at(1200)))
        #expect(warmUp.due(now: at(1400)) == [other])
        #expect(warmUp.filesMayStart(friend, now: at(60_000)))
    }

    @Test func aLinkDownForgetsAllAndTheNextLinkStartsOver() {
        var warmUp = NewLinkWarmUp()
        warmUp.link(friend, up: true, now: at(0))
        _ = warmUp.fileWaits(for: friend)
        _ = warmUp.hint(from: friend)
        #expect(warmUp.due(now: at(1000)) == [friend])
        warmUp.link(friend, up: false, now: at(2000))
        #expect(!warmUp.filesMayStart(friend, now: at(2000)))
        // A hint with no link up is left alone.
        #expect(warmUp.hint(from: friend) == [])
        warmUp.link(friend, up: true, now: at(3000))
        #expect(warmUp.fileWaits(for: friend) == [.sendHint])
        #expect(warmUp.hint(from: friend) == [.askFriendsNode])
        #expect(warmUp.due(now: at(3999)) == [])
        #expect(warmUp.due(now: at(4000)) == [friend])
    }

    @Test func aFriendNeverLinkedNeverStarts() {
        let warmUp = NewLinkWarmUp()
        #expect(!warmUp.filesMayStart(friend, now: at(10_000)))
    }
}
