import Foundation
import RtcCalls
import Testing

/// What the reference peers put on the wire (carrier wire notes §7), decoded.
@Suite struct RtcSignalTests {
    static func decode(_ text: String) throws -> RtcSignal { try RtcSignal.decode(Array(text.utf8)) }

    @Test func peerWebrtcExamplesDecode() throws {
        let offer = try Self.decode(
            #"{"type":"offer","sdp":"v=0\r\n","options":["audio","video"],"callId":"3f1c9a0e-5d2b-4c1e-9f7a-1b2c3d4e5f60"}"#
        )
        #expect(offer.type == .offer && offer.options == [.audio, .video] && offer.sdp == "v=0\r\n")
        let candidate = try Self.decode(
            #"{"type":"candidate","candidates":[{"sdp":"candidate:1 1 udp 2122260223 10.0.0.1 64501 typ host","sdpMLineIndex":0,"sdpMid":"audio"}],"callId":"x"}"#
        )
        #expect(candidate.candidates?.first?.sdpMid == "audio")
        #expect(try Self.decode(#"{"type":"action","action":"accept","callId":"x"}"#).action == .accept)
        #expect(try Self.decode(#"{"type":"event","event":"ringing","callId":"x"}"#).event == .ringing)
        #expect(try Self.decode(#"{"type":"bye","reason":"declined","callId":"x"}"#).reason == .declined)
    }

    @Test func variantsOfOtherPeersDecode() throws {
        // Android: removal-candidates, and integer reasons.
        #expect(try Self.decode(#"{"type":"removal-candidates","candidates":[]}"#).type == .removeCandidates)
        #expect(try Self.decode(#"{"type":"bye","reason":-1}"#).reason == .declined)
        #expect(try Self.decode(#"{"type":"bye","reason":0}"#).reason == .normal)
        #expect(try Self.decode(#"{"type":"bye","reason":1}"#).reason == .error)
        // An unknown reason string, unknown fields and options, a trailing NUL (native bindings).
        let odd = try RtcSignal.decode(
            Array(#"{"type":"bye","reason":"gone fishing","extra":{"a":1},"options":["audio","hologram"]}"#.utf8) + [0])
        #expect(odd.reason == .unknown && odd.options == [.audio])
        // The callId echoed upper-case still names the same call.
        let upper = try Self.decode(#"{"type":"answer","sdp":"v=0","callId":"3F1C9A0E-5D2B"}"#)
        #expect(upper.sameCall("3f1c9a0e-5d2b"))
        // The legacy SDK sends no callId at all.
        #expect(try Self.decode(#"{"type":"answer","sdp":"v=0"}"#).callId == nil)
    }

    @Test func whatIsNotASignalIsAnError() {
        for text in ["", "hello", "{}", #"{"type":"dance"}"#, #"{"type":42}"#, "[1,2]"] {
            #expect(throws: SignalError.self) { try Self.decode(text) }
        }
    }

    @Test func encodingRoundTripsWithTheWireNames() throws {
        let signal = RtcSignal(
            type: .removeCandidates, candidates: [.init(sdp: "candidate:1", sdpMLineIndex: 0, sdpMid: "0")],
            reason: .busy, options: [.audio, .data], action: .reject, callId: "c", event: .online)
        let text = String(decoding: signal.encoded(), as: UTF8.self)
        #expect(text.contains(#""type":"remove-candidates""#) && text.contains(#""reason":"busy""#))
        #expect(try RtcSignal.decode(signal.encoded()) == signal)
    }
}
