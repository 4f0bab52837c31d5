import RtcSDP
import Testing

@Suite struct SDPParsingTests {
    let minimal = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"

    @Test func toleratesBareNewlinesUnknownLinesAndSessionLevelTransport() throws {
        let text = """
            v=0
            o=- 42 2 IN IP4 10.0.0.1
            s=test
            i=some information
            t=0 0
            a=ice-ufrag:abcd
            a=ice-pwd:0123456789abcdefghijkl
            a=fingerprint:SHA-256 \((0..<32).map { _ in "AB" }.joined(separator: ":"))
            a=setup:passive
            a=x-custom:value
            m=application 9 UDP/DTLS/SCTP webrtc-datachannel
            c=IN IP4 0.0.0.0
            a=mid:data
            a=sctp-port:5000
            a=max-message-size:1073741823
            a=sctpmap:5000 webrtc-datachannel 1024
            """
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.origin.sessionId == 42 && sdp.sessionName == "test")
        let data = sdp.media[0]
        #expect(sdp.iceCredentials(for: data)! == ("abcd", "0123456789abcdefghijkl"))
        #expect(sdp.fingerprints(for: data).first?.algorithm == "sha-256")
        #expect(sdp.setup(for: data) == .passive)
        #expect(data.maxMessageSize == 1_073_741_823 && data.sctpPort == 5000)
        #expect(sdp.otherAttributes == [Attribute("x-custom", "value")])
        #expect(sdp.description.contains("\r\na=x-custom:value\r\n"))
    }

    @Test func candidatesParseWithAndWithoutPrefixesAndKeepExtensions() throws {
        let text =
            "candidate:842163049 1 udp 1677729535 203.0.113.5 46154 typ srflx raddr 10.0.0.2 rport 46154 generation 0 ufrag WbBI network-cost 999"
        let candidate = try Candidate(parsing: "a=" + text)
        #expect(candidate.type == .srflx && candidate.port == 46154 && candidate.relatedPort == 46154)
        #expect(candidate.extensionValue("ufrag") == "WbBI")
        #expect(candidate.description == text)
        #expect(try Candidate(parsing: String(text.dropFirst("candidate:".count))) == candidate)
        let relay = try Candidate(parsing: "candidate:1 1 UDP 16777215 127.0.0.1 3478 typ relay raddr 0.0.0.0 rport 0")
        #expect(relay.transport == "udp" && relay.type == .relay)
    }

    @Test(arguments: [
        ("", "empty"),
        ("o=- 1 1 IN IP4 x\r\n", "starts with v=0"),
        ("v=1\r\n", "starts with v=0"),
        ("v=0\r\ns=-\r\n", "no o= line"),
        ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\nthis is not sdp\r\n", "not a <type>=<value> line"),
        ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\nm=audio x UDP/TLS/RTP/SAVPF 0\r\n", "bad port"),
        ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\nm=audio 9\r\n", "m= needs"),
        ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\na=fingerprint:sha-256 AB:CD\r\n", "needs 32 bytes"),
        ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\na=fingerprint:sha-256 ZZ\r\n", "fingerprint must be"),
        ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\na=setup:sideways\r\n", "setup must be"),
        ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\nm=audio 9 RTP/AVP 0\r\na=rtpmap:96 opus\r\n", "rtpmap needs"),
        ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\nm=audio 9 RTP/AVP 0\r\na=rtpmap:200 opus/48000\r\n", "above 127"),
        (
            "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\nm=audio 9 RTP/AVP 0\r\na=candidate:1 1 udp x 1.2.3.4 5 typ host\r\n",
            "bad priority"
        ),
        ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\nm=audio 9 RTP/AVP 0\r\na=extmap:0 urn:x\r\n", "extension id"),
        (
            "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\nm=application 9 UDP/DTLS/SCTP x\r\na=sctp-port:70000\r\n",
            "bad sctp-port"
        ),
    ])
    func malformedDescriptionsAreClearErrors(_ text: String, _ expected: String) {
        #expect {
            try SessionDescription(parsing: text)
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func errorsNameTheLine() {
        #expect {
            try SessionDescription(parsing: minimal + "m=audio 9 RTP/AVP 0\r\na=setup:nope\r\n")
        } throws: { error in
            (error as? SDPError)?.line == 6
        }
    }

    @Test func oversizedInputIsRefused() {
        let huge = minimal + String(repeating: "a=x-filler:0123456789\r\n", count: 20_000)
        #expect(throws: SDPError.self) { try SessionDescription(parsing: huge) }
    }

    @Test func staticPayloadTypesWithoutRtpmapBecomeCodecs() throws {
        let sdp = try SessionDescription(parsing: minimal + "m=audio 9 RTP/AVP 0 8\r\na=rtcp-fb:* nack\r\n")
        #expect(sdp.media[0].codecs.map(\.name) == ["PCMU", "PCMA"])
        #expect(sdp.media[0].codecs.allSatisfy { $0.feedback == ["nack"] })
    }

    @Test func directionReverses() {
        #expect(Direction.sendonly.reversed == .recvonly)
        #expect(Direction.recvonly.reversed == .sendonly)
        #expect(Direction.sendrecv.reversed == .sendrecv)
    }
}
