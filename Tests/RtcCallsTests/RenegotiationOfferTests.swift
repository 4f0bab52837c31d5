import RtcPeer
import Testing

@testable import RtcCalls

/// An offer for a call this client never had is a new call, unless it is a
/// renegotiation from our own stack (the session version of its origin past
/// 1): the signals of a call whose process is gone, sent again by the peer's
/// node when the link came back (they made a new call end in glare).
@Suite struct RenegotiationOfferTests {
    @Test func aFirstOfferOpensACallAndAnIceRestartDoesNot() async throws {
        let peer = try PeerConnection()
        _ = await peer.createDataChannel(.init(label: "data"))
        let first = try await peer.createOffer()
        #expect(!CallClient.isRenegotiation(first))
        try await peer.setLocalDescription(first)
        let restart = try await peer.createOffer(iceRestart: true)
        #expect(CallClient.isRenegotiation(restart))
        await peer.close()
    }

    @Test func otherStacksOffersAreNewCalls() {
        let chromium = "v=0\r\no=- 4611731400430051336 3 IN IP4 127.0.0.1\r\ns=-\r\n"
        #expect(!CallClient.isRenegotiation(chromium))
        #expect(!CallClient.isRenegotiation("v=0\r\ns=-\r\n"))
        #expect(!CallClient.isRenegotiation("o=carrier-rtc 1 x IN IP4 127.0.0.1"))
    }
}
