import Foundation
import RtcSCTP
import TestSupport
import Testing

@testable import RtcPeer

/// What a hostile or broken peer sends a peer connection: bounded in cost,
/// refused or dropped with a reason, never silently.
@Suite struct HostileInputTests {
    /// Sections map to transceivers through dictionaries: 256 (the most a
    /// description may have) are answered one to one; 257 are refused.
    @Test func anOfferWithTheMostSectionsIsAnsweredAndOneMoreRefused() async throws {
        let peer = try PeerConnection(configuration: LoopbackCall.loopback)
        let started = ContinuousClock.now
        try await peer.setRemoteDescription(SyntheticSDP.offer(sections: 256), type: .offer)
        let answer = try await peer.createAnswer()
        print("256 sections answered in \(ContinuousClock.now - started)")  // for the notes, not asserted
        #expect(answer.components(separatedBy: "\r\nm=audio").count - 1 == 256)
        for index in [0, 128, 255] { #expect(answer.contains("a=mid:\(index)\r\n")) }
        await peer.close()
        let other = try PeerConnection(configuration: LoopbackCall.loopback)
        await #expect {
            try await other.setRemoteDescription(SyntheticSDP.offer(sections: 257), type: .offer)
        } throws: { error in
            "\(error)".contains("more than 256 media sections")
        }
        await other.close()
    }

    @Test func candidatesWithHostNamesThatDoNotResolveAreDroppedAndCounted() async throws {
        let call = try LoopbackCall()
        _ = await call.offerer.createDataChannel(DataChannelParameters(label: "data"))
        #expect(try await call.connect())
        await #expect(throws: PeerError.self) {
            try await call.offerer.addIceCandidate("candidate:1 1 udp 2122260223 device.invalid 9 typ host")
        }
        // An mDNS name (as browsers send): resolved off the actor, dropped when it does not resolve.
        try await call.offerer.addIceCandidate(
            "candidate:2 1 udp 2122260223 1f4a2b3c-9d8e-4f00-8a1b-2c3d4e5f6a7b.local 50000 typ host")
        try await call.offerer.addIceCandidate("candidate:3 1 udp 2122260223 127.0.0.1 9 typ host")
        var dropped: [String: Int] = [:]
        for _ in 0..<100 {
            dropped = await call.offerer.stats().droppedCandidates
            if dropped["mDNS name did not resolve"] != nil { break }
            try await Task.sleep(for: .milliseconds(50))  // the resolver runs off the actor; bounded polling
        }
        #expect(dropped["reserved .invalid host name"] == 1)
        #expect(dropped["mDNS name did not resolve"] == 1)
        #expect(dropped.values.reduce(0, +) == 2, "the IP literal was used: \(dropped)")
        #expect(await call.offerer.connectionState == .connected)
        await call.offerer.close()
        await call.answerer.close()
    }

    @Test func candidatesBeforeAnyDescriptionAreHeldWithinABound() async throws {
        let peer = try PeerConnection(configuration: LoopbackCall.loopback)
        for index in 0..<256 {
            try await peer.addIceCandidate("candidate:\(index) 1 udp 1 127.0.0.1 \(10000 + index) typ host")
        }
        await #expect {
            try await peer.addIceCandidate("candidate:999 1 udp 1 127.0.0.1 9999 typ host")
        } throws: { error in
            "\(error)".contains("more than 256 candidates came before any description")
        }
        #expect(await peer.stats().droppedCandidates["more than 256 candidates before a description"] == 1)
        await peer.close()
    }
}

/// Datagrams from a stranger to a live connection's port: random bytes and
/// packets shaped like STUN, DTLS, RTP and RTCP. They are dropped (and
/// counted); the connection and the data on it go on intact.
@Suite struct StrayDatagramTests {
    static func strays(count: Int) -> [[UInt8]] {
        var generator = SystemRandomNumberGenerator()
        func random(_ length: Int) -> [UInt8] { (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        return (0..<count).map { index in
            switch index % 6 {
            case 0: return random(Int.random(in: 1...1200))
            case 1: return [0x00, 0x01, 0x00, 0x08, 0x21, 0x12, 0xA4, 0x42] + random(20)  // STUN binding request
            case 2: return [23, 0xFE, 0xFD, 0x00, 0x01] + random(6) + [0x00, 0x40] + random(64)  // DTLS application data
            case 3: return [22, 0xFE, 0xFD, 0x00, 0x00] + random(6) + [0x00, 0x20] + random(32)  // DTLS handshake
            case 4: return [0x80, 0x6F] + random(10) + random(100)  // RTP
            default: return [0x80, 0xC8, 0x00, 0x06] + random(24)  // RTCP sender report
            }
        }
    }

    @Test func strayDatagramsAreDroppedAndTheDataGoesOn() async throws {
        let call = try LoopbackCall()
        let (channel, remote) = try #require(try await call.connectWithChannel())
        // Both ends' ports, from their selected pairs.
        let ports = [
            await call.offerer.stats().selectedPair?.local, await call.answerer.stats().selectedPair?.local,
        ].compactMap { $0.flatMap(Self.port) }
        #expect(ports.count == 2)

        let received = Task { () -> Int in
            var count = 0
            for await event in remote.events {
                if case .binary(let bytes) = event, bytes.count == 1000, bytes[0] == UInt8(count % 256) { count += 1 }
                if count == 2000 { break }
            }
            return count
        }
        // From a stranger (libnice drops what comes from no known candidate), and
        // from the peer's own address (these reach our demultiplexer, DTLS and SRTP).
        let socket = try StraySocket()
        for (index, stray) in Self.strays(count: 3000).enumerated() {
            socket.send(stray, to: ports[index % 2])
            await call.offerer.sendRawDatagram(stray)
            if index < 2000 { try channel.send([UInt8](repeating: UInt8(index % 256), count: 1000)) }
        }
        let delivered = await withTimeout(.seconds(20)) { await received.value }
        #expect(delivered == 2000, "messages delivered in order despite the strays")
        #expect(await call.offerer.connectionState == .connected)
        #expect(await call.answerer.connectionState == .connected)
        try channel.send("still here")
        #expect(await remote.nextText() == "still here")
        let stats = await call.answerer.stats()
        // 3000 from the peer's address: a sixth random (some land in our classes), 500 STUN (libnice's),
        // 1000 DTLS-shaped, 1000 RTP/RTCP-shaped (no SRTP on a data-only connection: all dropped).
        #expect(stats.srtpDropped >= 900, "RTP/RTCP-shaped strays: \(stats.srtpDropped)")
        #expect(stats.strayDropped >= 900, "DTLS-shaped and classless strays: \(stats.strayDropped)")
        await call.close()
    }

    static func port(_ candidate: String) -> UInt16? {
        let fields = candidate.split(separator: " ")
        return fields.count > 5 ? UInt16(fields[5]) : nil
    }
}

/// A plain UDP socket on 127.0.0.1 that sends what it is given.
final class StraySocket: Sendable {
    let fd: Int32

    init() throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw CocoaError(.fileNoSuchFile) }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8], to port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}

/// What a sender may report as delivered: not what it handed to the channel,
/// but that less what the peer has not acknowledged.
@Suite struct UnacknowledgedAmountTests {
    @Test func unacknowledgedBytesFallToZeroOnlyOnceThePeerHasThem() async throws {
        let call = try LoopbackCall()
        let (channel, remote) = try #require(try await call.connectWithChannel())
        let total = 160 * 65536
        let received = Task { () -> Int in
            var bytes = 0
            for await event in remote.events {
                if case .binary(let data) = event { bytes += data.count }
                if bytes >= total { break }
            }
            return bytes
        }
        for index in 0..<160 { try channel.send([UInt8](repeating: UInt8(index), count: 65536)) }
        // Just handed over: not all of it can have been acknowledged yet.
        let rightAfter = channel.unacknowledgedAmount
        #expect(rightAfter > 0 && rightAfter <= total, "unacknowledged right after sending: \(rightAfter) of \(total)")
        #expect(await received.value == total)
        var left = channel.unacknowledgedAmount
        for _ in 0..<100 where left > 0 {
            try await Task.sleep(for: .milliseconds(20))  // the last SACK may trail the data; bounded
            left = channel.unacknowledgedAmount
        }
        #expect(left == 0)
        await call.close()
    }
}
