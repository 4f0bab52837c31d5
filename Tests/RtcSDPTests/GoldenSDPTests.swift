import Foundation
import RtcSDP
import Testing

func golden(_ name: String) throws -> String {
    let url = try #require(Bundle.module.url(forResource: "Golden/\(name)", withExtension: "sdp"))
    return try String(contentsOf: url, encoding: .utf8)
}

/// Offers and answers captured from real stacks (scripts/capture-sdp).
@Suite struct GoldenSDPTests {
    static let files = [
        "aiortc-offer", "aiortc-answer", "aiortc-datachannel-offer", "chromium-offer", "chromium-answer",
        "gstreamer-offer", "firefox-offer", "firefox-answer",
    ]

    @Test(arguments: files) func parsesAndRoundTrips(_ name: String) throws {
        let parsed = try SessionDescription(parsing: try golden(name))
        #expect(!parsed.media.isEmpty)
        let again = try SessionDescription(parsing: parsed.description)
        #expect(again == parsed, "\(name) changed in a round trip")
        // Every media section can be connected: credentials, fingerprint and a setup role.
        for media in parsed.media where !media.isRejected {
            #expect(parsed.iceCredentials(for: media) != nil)
            #expect(!parsed.fingerprints(for: media).isEmpty)
            #expect(parsed.setup(for: media) != nil)
        }
    }

    /// Firefox puts the fingerprint and the direction at session level, gives extmap
    /// entries a direction, and lists RTP and RTCP candidates, IPv6 and TCP ones.
    @Test func firefoxOfferWithSessionLevelFingerprint() throws {
        let offer = try SessionDescription(parsing: try golden("firefox-offer"))
        #expect(offer.media.map(\.kind) == ["audio", "video", "application"])
        #expect(offer.groups.first?.mids == ["0", "1", "2"])
        let audio = offer.media[0]
        #expect(offer.fingerprints(for: audio).first?.algorithm == "sha-256")
        #expect(audio.codecs.contains { $0.name.lowercased() == "opus" && $0.clockRate == 48000 })
        #expect(audio.headerExtensions.contains { $0.uri == "urn:ietf:params:rtp-hdrext:sdes:mid" })
        #expect(audio.candidates.contains { $0.transport.lowercased() == "tcp" })
        #expect(offer.media[1].codecs.contains { $0.name == "VP8" })
        #expect(offer.media[2].isDataChannel && offer.media[2].sctpPort == 5000)
    }

    @Test func chromiumOffer() throws {
        let sdp = try SessionDescription(parsing: try golden("chromium-offer"))
        #expect(sdp.bundle == ["0", "1", "2"])
        #expect(sdp.extmapAllowMixed)
        #expect(sdp.supportsTrickle)
        #expect(sdp.media.map(\.kind) == ["audio", "video", "application"])
        let audio = sdp.media[0]
        #expect(audio.mid == "0" && audio.rtcpMux && audio.rtcpReducedSize && audio.direction == .sendrecv)
        #expect(audio.setup == .actpass)
        #expect(audio.fingerprints.first?.algorithm == "sha-256" && audio.fingerprints.first?.bytes.count == 32)
        let opus = try #require(audio.codecs.first { $0.name.lowercased() == "opus" })
        #expect(opus.clockRate == 48000 && opus.channels == 2)
        #expect(opus.parameterMap["useinbandfec"] == "1")
        #expect(opus.feedback.contains("transport-cc"))
        #expect(audio.headerExtensions.contains { $0.uri == "urn:ietf:params:rtp-hdrext:sdes:mid" })
        let video = sdp.media[1]
        let vp8 = try #require(video.codecs.first { $0.name == "VP8" })
        #expect(vp8.feedback.contains("nack pli") && vp8.feedback.contains("ccm fir"))
        let rtx = try #require(
            video.codecs.first { $0.name == "rtx" && $0.parameterMap["apt"] == "\(vp8.payloadType)" })
        #expect(rtx.clockRate == 90000)
        #expect(video.ssrcGroups.first?.semantics == "FID")
        let data = sdp.media[2]
        #expect(data.isDataChannel && data.sctpPort == 5000 && data.maxMessageSize == 262144)
        #expect(data.formats == ["webrtc-datachannel"])
        #expect(audio.candidates.allSatisfy { $0.address.hasSuffix(".local") && $0.type == .host })
    }

    @Test func aiortcOfferCarriesAllCandidatesAndThreeFingerprints() throws {
        let sdp = try SessionDescription(parsing: try golden("aiortc-offer"))
        let audio = sdp.media[0]
        #expect(audio.endOfCandidates)
        #expect(!audio.candidates.isEmpty)
        #expect(audio.fingerprints.map(\.algorithm) == ["sha-256", "sha-384", "sha-512"])
        #expect(sdp.media[1].ssrcGroups == [SsrcGroup(semantics: "FID", ssrcs: sdp.media[1].ssrcGroups[0].ssrcs)])
        let answer = try SessionDescription(parsing: try golden("aiortc-answer"))
        #expect(answer.media.allSatisfy { $0.setup == .active })
    }

    @Test func gstreamerOfferWithTcpCandidatesAndNamedMids() throws {
        let sdp = try SessionDescription(parsing: try golden("gstreamer-offer"))
        #expect(sdp.bundle == ["audio0", "video1", "application2"])
        #expect(sdp.iceOptions == ["trickle"])
        let tcp = sdp.media[0].candidates.filter { $0.transport == "tcp" }
        #expect(!tcp.isEmpty && tcp.allSatisfy { $0.tcpType != nil })
        #expect(sdp.media[0].codecs.first?.name == "OPUS")
        #expect(sdp.media[0].attribute("rtcp-mux-only").isPresent)
    }
}
