import Foundation
import RtcFileTransfer
import Testing

/// The friend file protocol's two state machines against each other, with
/// the channel played by the test: whole transfers, resumes, refusals,
/// pauses, and peers that break the protocol.
@Suite struct FriendFileProtocolTests {
    static let sha = String(repeating: "cd", count: 32)

    /// Runs the sender until it waits or finishes, handing its messages to the
    /// receiver (`onOffer` answers the offer) and its bytes through `deliver`.
    struct Wire {
        var sender: FriendFileSender
        var receiver: FriendFileReceiver?
        var written: [(UInt64, Int)] = []
        var complete = false

        mutating func run(have: UInt64 = 0, refuse: String? = nil, buffered: Int = 0) -> FriendFileSender.Step {
            while true {
                let step = sender.next(buffered: buffered)
                switch step {
                case .send(let message):
                    // Through JSON, as on the wire.
                    let text = message.json
                    if case .offer = message {
                        guard case .success(var receiver) = FriendFileReceiver.read(offer: text, maxSize: 1 << 30)
                        else { return step }
                        let answer = refuse.map { FriendFileMessage.refuse(reason: $0) } ?? receiver.accept(have: have)
                        self.receiver = receiver
                        _ = sender.received(FriendFileMessage(json: answer.json) ?? answer)
                    } else {
                        _ = receiver?.received(message)
                    }
                case .bytes(let at, let count):
                    sender.sent(count)
                    guard case .write(let position, let done)? = receiver?.bytes(count) else { return step }
                    #expect(position == at)
                    written.append((position, count))
                    if done {
                        complete = true
                        if let verdict = receiver?.verdict(ok: true, reason: nil) { _ = sender.received(verdict) }
                    }
                case .wait, .finished:
                    return step
                }
            }
        }
    }

    @Test func aWholeFileGoesInBlocksAndEndsConfirmed() {
        var wire = Wire(sender: FriendFileSender(name: "a.bin", size: 200_000, sha256: Self.sha))
        #expect(wire.run() == .finished(.confirmed))
        #expect(wire.written.map(\.1) == [65536, 65536, 65536, 3392])
        #expect(wire.complete)
    }

    @Test func aResumedFileStartsAtTheReceiversBytes() {
        var wire = Wire(sender: FriendFileSender(name: "a.bin", size: 200_000, sha256: Self.sha))
        #expect(wire.run(have: 150_000) == .finished(.confirmed))
        #expect(wire.written.first?.0 == 150_000)
        #expect(wire.written.map(\.1).reduce(0, +) == 50_000)
    }

    @Test func aReceiverWithEveryByteAcceptsAtTheEnd() throws {
        var receiver = try FriendFileReceiver.read(
            offer: FriendFileMessage.offer(name: "x", size: 10, sha256: Self.sha).json, maxSize: 100
        ).get()
        #expect(receiver.accept(have: 10) == .accept(offset: 10))
        #expect(receiver.complete)
        var sender = FriendFileSender(name: "x", size: 10, sha256: Self.sha)
        _ = sender.next(buffered: 0)
        #expect(sender.received(.accept(offset: 10)) == .accepted(offset: 10))
        #expect(sender.next(buffered: 0) == .wait)
        _ = sender.received(.verdict(ok: true, reason: nil))
        #expect(sender.next(buffered: 0) == .finished(.confirmed))
    }

    /// An offer to carry on what toxcore has under way says so; a plain one does not, as before.
    @Test func anOfferThatCarriesOnSaysSoAndAPlainOneIsUnchanged() throws {
        var sender = FriendFileSender(name: "x", size: 10, sha256: Self.sha, continuing: true)
        guard case .send(let offer) = sender.next(buffered: 0) else {
            Issue.record("no offer")
            return
        }
        #expect(offer.json.contains("\"continues\":true"))
        let receiver = try FriendFileReceiver.read(offer: offer.json, maxSize: 100).get()
        #expect(receiver.continuing)
        let plain = FriendFileMessage.offer(name: "x", size: 10, sha256: Self.sha)
        #expect(!plain.json.contains("continues"))
        #expect(try !FriendFileReceiver.read(offer: plain.json, maxSize: 100).get().continuing)
    }

    @Test func aRefusalEndsTheSenderBeforeAnyByte() {
        var wire = Wire(sender: FriendFileSender(name: "a.bin", size: 200_000, sha256: Self.sha))
        #expect(wire.run(refuse: "no room") == .finished(.refused("no room")))
        #expect(wire.written.isEmpty)
    }

    @Test func tooLargeOrMalformedOffersAreRefusedWithAReason() {
        let big = FriendFileMessage.offer(name: "x", size: 101, sha256: Self.sha).json
        guard case .failure(let refusal) = FriendFileReceiver.read(offer: big, maxSize: 100) else {
            Issue.record("a file over the limit was taken")
            return
        }
        #expect(refusal.reason.contains("101 bytes"))
        for text in [
            "{\"type\":\"offer\",\"name\":\"x\",\"size\":-1,\"sha256\":\"\(Self.sha)\"}",
            "{\"type\":\"offer\",\"name\":\"x\",\"size\":1.5,\"sha256\":\"\(Self.sha)\"}",
            "{\"type\":\"offer\",\"name\":\"x\",\"size\":1,\"sha256\":\"zz\"}",
            "not json", String(repeating: " ", count: 5000),
        ] {
            #expect(throws: FriendFileReceiver.OfferRefusal.self) {
                try FriendFileReceiver.read(offer: text, maxSize: 100).get()
            }
        }
    }

    @Test func theBufferAndPausesHoldTheBytes() {
        var sender = FriendFileSender(name: "a", size: 1 << 20, sha256: Self.sha)
        _ = sender.next(buffered: 0)
        _ = sender.received(.accept(offset: 0))
        #expect(sender.next(buffered: 5 << 20) == .wait)
        #expect(sender.received(.pause) == .paused)
        #expect(sender.next(buffered: 0) == .wait)
        #expect(sender.received(.resume) == .resumed)
        #expect(sender.pause() == .pause)
        #expect(sender.pause() == nil)
        #expect(sender.next(buffered: 0) == .wait)
        #expect(sender.resume() == .resume)
        #expect(sender.next(buffered: 0) == .bytes(at: 0, count: 65536))
    }

    @Test func aChannelThatClosesSaysWhetherThePeerHadAnswered() {
        var unanswered = FriendFileSender(name: "a", size: 10, sha256: Self.sha)
        _ = unanswered.next(buffered: 0)
        unanswered.channelClosed()
        #expect(unanswered.next(buffered: 0) == .finished(.interrupted(answered: false)))
        var midway = FriendFileSender(name: "a", size: 1 << 20, sha256: Self.sha)
        _ = midway.next(buffered: 0)
        _ = midway.received(.accept(offset: 0))
        _ = midway.next(buffered: 0)
        midway.sent(65536)
        midway.channelClosed()
        #expect(midway.next(buffered: 0) == .finished(.interrupted(answered: true)))
    }

    @Test func aCancelIsToldOnceEitherWay() throws {
        var sender = FriendFileSender(name: "a", size: 1 << 20, sha256: Self.sha)
        _ = sender.next(buffered: 0)
        _ = sender.received(.accept(offset: 0))
        sender.cancel(reason: "stopped")
        #expect(sender.next(buffered: 0) == .send(.cancel(reason: "stopped")))
        #expect(sender.next(buffered: 0) == .finished(.cancelled(byPeer: false, reason: "stopped")))
        var receiver = try FriendFileReceiver.read(
            offer: FriendFileMessage.offer(name: "x", size: 10, sha256: Self.sha).json, maxSize: 100
        ).get()
        _ = receiver.accept(have: 0)
        #expect(receiver.received(.cancel(reason: "bye")) == .cancelled("bye"))
    }

    @Test func peersThatBreakTheProtocolAreCaught() throws {
        var sender = FriendFileSender(name: "a", size: 10, sha256: Self.sha)
        _ = sender.next(buffered: 0)
        _ = sender.received(.accept(offset: 11))
        guard case .send(.cancel) = sender.next(buffered: 0),
            case .finished(.failed(let why)) = sender.next(buffered: 0)
        else {
            Issue.record("an accept past the size was taken")
            return
        }
        #expect(why.contains("past the file"))
        var receiver = try FriendFileReceiver.read(
            offer: FriendFileMessage.offer(name: "x", size: 10, sha256: Self.sha).json, maxSize: 100
        ).get()
        #expect(receiver.bytes(1) == .violation("file bytes before the accept or after the verdict"))
        _ = receiver.accept(have: 8)
        #expect(receiver.bytes(3) == .violation("more bytes than the offered 10"))
        #expect(receiver.bytes(2) == .write(at: 8, complete: true))
        #expect(receiver.received(.verdict(ok: true, reason: nil)) != nil)
    }

    @Test func theVerdictDecidesAndItsWaitEnds() {
        var wire = Wire(sender: FriendFileSender(name: "a", size: 10, sha256: Self.sha))
        _ = wire.sender.next(buffered: 0)
        _ = wire.sender.received(.accept(offset: 0))
        _ = wire.sender.next(buffered: 0)
        wire.sender.sent(10)
        _ = wire.sender.received(.verdict(ok: false, reason: "the SHA-256 differs"))
        #expect(wire.sender.next(buffered: 0) == .finished(.rejected("the SHA-256 differs")))
        var silent = FriendFileSender(name: "a", size: 10, sha256: Self.sha)
        _ = silent.next(buffered: 0)
        _ = silent.received(.accept(offset: 10))
        silent.verdictWaitEnded()
        _ = silent.next(buffered: 0)
        guard case .finished(.failed(let why)) = silent.next(buffered: 0) else {
            Issue.record("no end without a verdict")
            return
        }
        #expect(why.contains("no verdict"))
    }
}
