import Foundation
import RtcSCTP
import TestSupport
import Testing

@testable import RtcPeer

/// What a hostile or broken peer sends a peer connection: bounded in cost,
/// refused or dropped with a reason, never silently.
@Suite struct HostileInputTests {
    static func offer(sections: Int) -> String {
        var lines = [
            "v=0", "o=- 1 1 IN IP4 127.0.0.1", "s=-", "t=0 0",
            "a=fingerprint:sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":"), "a=ice-ufrag:abcd",
            "a=ice-pwd:abcdefghijklmnopqrstuvwx",
        ]
        for index in 0..<sections {
            lines += [
                "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:\(index)", "a=rtpmap:111 opus/48000/2",
                "a=sendrecv", "a=setup:actpass", "a=rtcp-mux",
            ]
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// Sections map to transceivers through dictionaries: 256 (the most a
    /// description may have) are answered one to one; 257 are refused.
    @Test func anOfferWithTheMostSectionsIsAnsweredAndOneMoreRefused() async throws {
        let peer = try PeerConnection(configuration: LoopbackCall.loopback)
        let started = ContinuousClock.now
        try await peer.setRemoteDescription(Self.offer(sections: 256))
        let answer = try await peer.createAnswer()
        print("256 sections answered in \(ContinuousClock.now - started)")  // for the notes, not asserted
        #expect(answer.components(separatedBy: "\r\nm=audio").count - 1 == 256)
        for index in [0, 128, 255] { #expect(answer.contains("a=mid:\(index)\r\n")) }
        await peer.close()
        let other = try PeerConnection(configuration: LoopbackCall.loopback)
        await #expect {
            try await other.setRemoteDescription(Self.offer(sections: 257))
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
