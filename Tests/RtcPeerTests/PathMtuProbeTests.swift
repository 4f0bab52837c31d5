import Foundation
import RtcSCTP
import TestSupport
import Testing

@testable import RtcPeer

/// The probe's wire form and its timing, without sockets or clocks.
struct PathMtuProbeTests {
    let start = ContinuousClock.now

    @Test func messagesRoundTripAndAProbeCutShortIsNotAnswered() throws {
        let probe = PathMtuProbe.encode(.probe(token: 0xDEAD_BEEF, size: 9000))
        #expect(probe.count == 9000)
        #expect(PathMtuProbe.isProbeMessage(probe))
        #expect(PathMtuProbe.decode(probe) == .probe(token: 0xDEAD_BEEF, size: 9000))
        // A relay that truncates leaves a probe shorter than it says: no acknowledgement.
        #expect(PathMtuProbe.decode(Array(probe.prefix(1500))) == nil)
        let ack = PathMtuProbe.encode(.acknowledgement(token: 7, size: 9000))
        #expect(ack.count == 12)
        #expect(PathMtuProbe.decode(ack) == .acknowledgement(token: 7, size: 9000))
        // SCTP packets (a real source port) are never taken for probes.
        #expect(!PathMtuProbe.isProbeMessage([0x13, 0x88, 0x13, 0x88] + [UInt8](repeating: 0, count: 8)))
        #expect(PathMtuProbe.decode([0, 0, 0, 9] + [UInt8](repeating: 0, count: 8)) == nil)
        #expect(PathMtuProbe.decode([0, 0, 0, 1]) == nil)
    }

    @Test func theSizeIsTheSmallerOfBothEndsAndOnlyWhenWorthIt() {
        #expect(PathMtuProbe.size(remoteAdvertised: nil) == nil)
        #expect(PathMtuProbe.size(remoteAdvertised: 1400) == nil)
        #expect(PathMtuProbe.size(remoteAdvertised: 9000) == 9000)
        #expect(PathMtuProbe.size(remoteAdvertised: 65000) == PathMtuProbe.largest)
    }

    @Test func probesAreRetriedThenGivenUp() {
        var probe = PathMtuProbe(size: 8000, token: 42, now: start)
        guard case .send(let first, let next) = probe.tick(now: start) else {
            Issue.record("no first probe")
            return
        }
        #expect(first.count == 8000)
        #expect(next == start + .milliseconds(20))
        let step6 = probe.tick(now: start + .milliseconds(5))
        #expect(step6 == .wait(until: start + .milliseconds(20)))
        guard case .send(_, let third) = probe.tick(now: start + .milliseconds(20)) else {
            Issue.record("no second probe")
            return
        }
        #expect(third == start + .milliseconds(60))
        guard case .send(_, let end) = probe.tick(now: start + .milliseconds(61)) else {
            Issue.record("no third probe")
            return
        }
        #expect(end == start + PathMtuProbe.giveUpAfter)
        let step7 = probe.tick(now: start + .milliseconds(100))
        #expect(step7 == .wait(until: start + PathMtuProbe.giveUpAfter))
        let last = probe.tick(now: start + PathMtuProbe.giveUpAfter)
        #expect(last == .done(nil))
        // Too late: the default stays.
        let settled1 = probe.acknowledged(token: 42, size: 8000)
        #expect(!settled1)
    }

    @Test func onlyTheMatchingAcknowledgementSettlesIt() {
        var probe = PathMtuProbe(size: 8000, token: 42, now: start)
        _ = probe.tick(now: start)
        let settled2 = probe.acknowledged(token: 41, size: 8000)
        #expect(!settled2)
        let settled3 = probe.acknowledged(token: 42, size: 1200)
        #expect(!settled3)
        let settled4 = probe.acknowledged(token: 42, size: 8000)
        #expect(settled4)
        let step8 = probe.tick(now: start + .milliseconds(1))
        #expect(step8 == .done(8000))
        let settled5 = probe.acknowledged(token: 42, size: 8000)
        #expect(!settled5)
    }
}

/// Two connections on loopback: the packet size SCTP settles on, seen in the
/// datagrams the offerer sends while 2 MB cross a data channel.
@Suite(.serialized) struct PathMtuOnTheWireTests {
    @Test func twoCarrierPeersOnLoopbackUseLargePackets() async throws {
        let call = try LoopbackCall()
        let largest = LargestDatagram()
        call.offerer.transport.sentDatagramTap = { largest.note($0.count) }
        let (local, remote) = try #require(try await call.connectWithChannel())
        #expect(try await Self.transfer(2 << 20, from: local, to: remote))
        // 2 MB went in SCTP packets of up to 16000 bytes (the probe is one
        // datagram), each in one DTLS record (less than 64 bytes of overhead).
        #expect(largest.value <= PathMtuProbe.largest + 64)
        #expect(largest.above8000 >= 100)
        #expect(await call.offerer.stats().sctpPacketSize == PathMtuProbe.largest)
        #expect(await call.answerer.stats().sctpPacketSize == PathMtuProbe.largest)
        await call.close()
    }

    @Test func aPeerThatDoesNotAdvertiseLargePacketsGetsTheDefault() async throws {
        let call = try LoopbackCall()
        let largest = LargestDatagram()
        call.offerer.transport.sentDatagramTap = { largest.note($0.count) }
        let channel = await call.offerer.createDataChannel(DataChannelParameters(label: "data"))
        let answererEvents = await call.answerer.events()
        // The answer without the attribute: an aiortc or a browser, as far as the offerer can tell.
        #expect(
            try await call.connect(tamperAnswer: {
                $0.split(separator: "\r\n", omittingEmptySubsequences: false)
                    .filter { !$0.hasPrefix("a=\(PathMtuProbe.attribute)") }.joined(separator: "\r\n")
            }))
        #expect(await channel.events.first(within: .seconds(10)) { $0 == .open ? true : nil } == true)
        let remote = try #require(
            await answererEvents.first(within: .seconds(10)) { event -> DataChannel? in
                if case .dataChannel(let channel) = event { return channel }
                return nil
            })
        #expect(try await Self.transfer(2 << 20, from: channel, to: remote))
        #expect(largest.value <= 1400)
        await call.close()
    }

    @Test func aPathThatDropsLargeDatagramsKeepsTheDefaultAndLosesNothing() async throws {
        let call = try RelayedCall()
        call.relay.setLargestDatagram(1500)
        let largest = LargestDatagram()
        call.offerer.transport.sentDatagramTap = { largest.note($0.count) }
        let (local, remote) = try #require(try await call.connectWithChannel())
        #expect(try await Self.transfer(2 << 20, from: local, to: remote))
        // The probes (the only large datagrams) were sent and lost; SCTP kept to the default.
        #expect((1...PathMtuProbe.retries.count).contains(largest.above8000))
        #expect(call.relay.currentCounts.dropped >= 1)
        #expect(await call.offerer.stats().sctpPacketSize == nil)
        await call.close()
    }

    /// Sends `bytes` in 64 KiB messages and waits until all have arrived intact.
    static func transfer(_ bytes: Int, from local: DataChannel, to remote: DataChannel) async throws -> Bool {
        let chunk = (0..<(64 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let receiver = Task {
            var received = 0
            for await event in remote.events {
                guard case .binary(let data) = event else { continue }
                if data != chunk { return false }
                received += data.count
                if received >= bytes { return true }
            }
            return false
        }
        for _ in 0..<(bytes / chunk.count) { try local.send(chunk) }
        let timeout = Task {
            try? await Task.sleep(for: .seconds(20))  // a bound, not a synchronisation
            receiver.cancel()
        }
        defer { timeout.cancel() }
        return await receiver.value
    }
}

/// The largest datagram a transport sent, and how many were large (noted from its sending threads).
final class LargestDatagram: @unchecked Sendable {
    private let lock = NSLock()
    private var largest = 0
    private var large = 0
    func note(_ size: Int) {
        lock.withLock {
            largest = max(largest, size)
            if size > 8000 { large += 1 }
        }
    }
    var value: Int { lock.withLock { largest } }
    /// How many were larger than 8000 bytes.
    var above8000: Int { lock.withLock { large } }
}
