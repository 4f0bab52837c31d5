import RtcDTLS
import RtcSDP
import Testing

@testable import RtcPeer

/// Offer/answer without sockets: two negotiators exchange descriptions (as
/// text, as the wire carries them) and their sections, roles and effects are checked.
@Suite struct NegotiatorTests {
    static func transport(_ name: String) -> Negotiator.LocalTransport {
        Negotiator.LocalTransport(
            ufrag: "u\(name)", pwd: "password-of-\(name)-0123456789",
            fingerprint: Fingerprint(algorithm: "sha-256", bytes: [UInt8](repeating: 7, count: 32)))
    }

    /// Through text and back, as a peer would receive it.
    static func wire(_ description: SessionDescription) throws -> SessionDescription {
        try SessionDescription(parsing: description.description)
    }

    /// A offers, B answers; returns B's DTLS role and A's.
    @discardableResult
    static func negotiate(
        _ a: inout Negotiator, _ b: inout Negotiator, aTransport: String = "a", bTransport: String = "b"
    )
        throws -> (offerer: DtlsTransport.Role?, answerer: DtlsTransport.Role?, answerEffects: Negotiator.RemoteEffects)
    {
        let offer = try a.createOffer(transport(aTransport))
        _ = try a.setLocal(offer)
        _ = try b.setRemote(try wire(offer), type: .offer)
        let answer = try b.createAnswer(transport(bTransport))
        let answererRole = try b.setLocal(answer)
        let effects = try a.setRemote(try wire(answer), type: .answer)
        return (effects.dtlsRole, answererRole, effects)
    }

    @Test func anOfferAndItsAnswerAgreeOnSectionsDirectionsAndRoles() throws {
        var a = Negotiator()
        var b = Negotiator()
        _ = a.addTransceiver(.audio, direction: .sendrecv)
        _ = a.addTransceiver(.video, direction: .sendonly)
        a.addDataSection()
        let early = b.addTransceiver(.audio, direction: .sendrecv)  // before the offer: takes the peer's mid
        #expect(early.mid == "0")
        let (offererRole, answererRole, _) = try Self.negotiate(&a, &b)
        // The offer says actpass; the answerer picks active (DTLS client), so the offerer serves.
        #expect(answererRole == .client && offererRole == .server)
        #expect(a.transceivers.map(\.info.mid) == b.transceivers.map(\.info.mid))
        #expect(b.transceivers.map(\.info.direction) == [.sendrecv, .recvonly])
        #expect(b.transceivers.count == 2)  // the early audio took the offer's audio mid
        #expect(a.dataNegotiated && b.dataNegotiated)
        #expect(a.signaling == .stable && b.signaling == .stable)
        #expect(b.transceivers.first?.info.codec?.name.lowercased() == "opus")
    }

    @Test func aRenegotiationAddsASectionAndKeepsTheMids() throws {
        var a = Negotiator()
        var b = Negotiator()
        _ = a.addTransceiver(.audio, direction: .sendrecv)
        a.addDataSection()
        try Self.negotiate(&a, &b)
        let versionBefore = a.sessionVersion
        let video = a.addTransceiver(.video, direction: .sendrecv)
        let (_, answererRole, effects) = try Self.negotiate(&a, &b)
        #expect(answererRole == .client)  // the same role again (DTLS is not redone)
        #expect(!effects.iceRestarted && !effects.first)
        #expect(b.transceivers.map(\.info.mid) == ["0", video.mid])
        #expect(a.sessionVersion > versionBefore)
    }

    @Test func theAnswererMayOfferToo() throws {
        var a = Negotiator()
        var b = Negotiator()
        _ = a.addTransceiver(.audio, direction: .sendrecv)
        try Self.negotiate(&a, &b)
        // Now B offers (an ICE restart: new credentials) and A answers.
        let offer = try b.createOffer(Self.transport("b2"))
        _ = try b.setLocal(offer)
        let effects = try a.setRemote(try Self.wire(offer), type: .offer)
        #expect(effects.iceRestarted && !effects.first)
        let answer = try a.createAnswer(Self.transport("a"))
        _ = try a.setLocal(answer)
        _ = try b.setRemote(try Self.wire(answer), type: .answer)
        #expect(a.signaling == .stable && b.signaling == .stable)
    }

    @Test func aRollbackRestoresTheLastStableDescription() throws {
        var a = Negotiator()
        var b = Negotiator()
        _ = a.addTransceiver(.audio, direction: .sendrecv)
        try Self.negotiate(&a, &b)
        let stable = a.localDescription?.description
        _ = b.addTransceiver(.video, direction: .sendrecv)
        // Both offer at once; A is polite: it rolls back and takes B's offer.
        let ours = try a.createOffer(Self.transport("a"))
        _ = try a.setLocal(ours)
        let theirs = try b.createOffer(Self.transport("b"))
        _ = try b.setLocal(theirs)
        #expect(throws: PeerError.self) { _ = try a.setRemote(try Self.wire(theirs), type: .offer) }
        try a.rollback()
        #expect(a.signaling == .stable && a.localDescription?.description == stable)
        _ = try a.setRemote(try Self.wire(theirs), type: .offer)
        let answer = try a.createAnswer(Self.transport("a"))
        _ = try a.setLocal(answer)
        _ = try b.setRemote(try Self.wire(answer), type: .answer)
        #expect(a.transceivers.map(\.info.kind) == [.audio, .video])
        #expect(a.signaling == .stable && b.signaling == .stable)
    }

    /// RTX (RFC 4588): offered with VP8, kept by an answerer that knows it,
    /// and announced with a stream of its own (`a=ssrc-group:FID`) by each side that sends.
    @Test func retransmissionsAreAgreedWithAStreamOfTheirOwn() throws {
        var a = Negotiator()
        var b = Negotiator()
        _ = a.addTransceiver(.video, direction: .sendrecv)
        try Self.negotiate(&a, &b)
        let offer = try Self.wire(try #require(a.localDescription))
        let answer = try Self.wire(try #require(b.localDescription))
        let (ours, theirs) = (try #require(a.transceivers.first?.info), try #require(b.transceivers.first?.info))
        #expect(ours.rtxPayloadType == 97 && theirs.rtxPayloadType == 97)
        let video = try #require(answer.media.first)
        #expect(video.codecs.map(\.name) == ["VP8", "rtx"] && video.codecs.last?.parameters == "apt=96")
        #expect(video.ssrcGroups == [SsrcGroup(semantics: "FID", ssrcs: [theirs.sendSsrc, theirs.rtxSsrc])])
        #expect(offer.media.first?.ssrcGroups == [SsrcGroup(semantics: "FID", ssrcs: [ours.sendSsrc, ours.rtxSsrc])])
    }

    /// A peer that pairs RTX with its own payload types is answered in them;
    /// an answer without RTX turns it off (NACKs answered on the media stream).
    @Test func retransmissionsFollowThePeersPayloadTypesOrAreLeftOut() throws {
        var a = Negotiator()
        var b = Negotiator()
        _ = a.addTransceiver(.video, direction: .sendrecv)
        let offer = try a.createOffer(Self.transport("a"))
        _ = try a.setLocal(offer)
        let renumbered = offer.description.replacingOccurrences(of: " 96 97", with: " 100 101")
            .replacingOccurrences(of: ":96 ", with: ":100 ").replacingOccurrences(of: ":97 ", with: ":101 ")
            .replacingOccurrences(of: "apt=96", with: "apt=100")
        _ = try b.setRemote(try SessionDescription(parsing: renumbered), type: .offer)
        let answer = try b.createAnswer(Self.transport("b"))
        #expect(b.transceivers.first?.info.codec?.payloadType == 100)
        #expect(b.transceivers.first?.info.rtxPayloadType == 101)
        #expect(answer.description.contains("a=fmtp:101 apt=100"))

        let withoutRtx = try Self.wire(try b.createAnswer(Self.transport("b"))).description
            .components(separatedBy: "\r\n").filter { !$0.contains("rtx") && !$0.contains("apt=") }
            .joined(separator: "\r\n").replacingOccurrences(of: " 100 101", with: " 100")
            .replacingOccurrences(of: "100", with: "96")
        _ = try b.setLocal(answer)
        _ = try a.setRemote(try SessionDescription(parsing: withoutRtx), type: .answer)
        #expect(a.transceivers.first?.info.rtxPayloadType == nil)
    }

    @Test func aSectionWithNoCodecOfOursIsRejectedInTheAnswer() throws {
        var b = Negotiator()
        let offer = try SessionDescription(
            parsing: """
                v=0\r
                o=- 1 1 IN IP4 127.0.0.1\r
                s=-\r
                t=0 0\r
                a=group:BUNDLE 0 1\r
                m=audio 9 UDP/TLS/RTP/SAVPF 111\r
                c=IN IP4 0.0.0.0\r
                a=mid:0\r
                a=ice-ufrag:abcd\r
                a=ice-pwd:abcdefghijklmnopqrstuvwx\r
                a=fingerprint:sha-256 \(Array(repeating: "AB", count: 32).joined(separator: ":"))\r
                a=setup:actpass\r
                a=sendrecv\r
                a=rtpmap:111 opus/48000/2\r
                m=video 9 UDP/TLS/RTP/SAVPF 102\r
                c=IN IP4 0.0.0.0\r
                a=mid:1\r
                a=sendrecv\r
                a=rtpmap:102 H264/90000\r

                """)
        let effects = try b.setRemote(offer, type: .offer)
        #expect(effects.first && effects.credentials.ufrag == "abcd")
        let answer = try Self.wire(try b.createAnswer(Self.transport("b")))
        #expect(answer.media.count == 2)
        #expect(answer.media[1].isRejected && answer.media[1].mid == "1")
        #expect(b.transceivers.map(\.info.kind) == [.audio])
    }

    @Test func aDescriptionThatDoesNotFitChangesNothing() throws {
        var a = Negotiator()
        var b = Negotiator()
        _ = a.addTransceiver(.audio, direction: .sendrecv)
        let offer = try a.createOffer(Self.transport("a"))
        var stripped = try Self.wire(offer)
        stripped.media[0].fingerprints = []
        #expect(throws: PeerError.badDescription("no DTLS fingerprint (a=fingerprint)")) {
            _ = try b.setRemote(stripped, type: .offer)
        }
        #expect(b.signaling == .stable && b.remoteDescription == nil && b.transceivers.isEmpty)
        // An answer when no offer of ours is out: refused, nothing changes.
        #expect(throws: PeerError.self) { _ = try b.setRemote(try Self.wire(offer), type: .answer) }
        #expect(b.signaling == .stable && b.remoteDescription == nil)
    }
}
