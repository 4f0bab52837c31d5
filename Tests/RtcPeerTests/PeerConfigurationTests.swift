import Testing

@testable import RtcPeer

/// ICE server URLs as users and RTCIceServer give them (RFC 7064, 7065).
struct PeerConfigurationTests {
    @Test func urlsGiveSchemeHostPortAndTransport() throws {
        #expect(try PeerConfiguration.parse("stun:203.0.113.1") == ("stun", "203.0.113.1", 3478, "udp"))
        #expect(try PeerConfiguration.parse("turn:turn.lab.test:3479") == ("turn", "turn.lab.test", 3479, "udp"))
        #expect(
            try PeerConfiguration.parse("turn:203.0.113.1?transport=tcp") == ("turn", "203.0.113.1", 3478, "tcp"))
        #expect(try PeerConfiguration.parse("turns:turn.lab.test") == ("turns", "turn.lab.test", 5349, "udp"))
        #expect(try PeerConfiguration.parse("TURN:[2001:db8::1]:3480") == ("turn", "2001:db8::1", 3480, "udp"))
        #expect(try PeerConfiguration.parse("stun:[::1]") == ("stun", "::1", 3478, "udp"))
    }

    @Test func badUrlsSayWhatIsWrong() {
        for (url, words) in [
            ("203.0.113.1:3478", "scheme must be"), ("http://x", "scheme must be"), ("stun", "no scheme"),
            ("turn::3478", "no host"), ("turn:host:0", "bad port"), ("turn:host:99999", "bad port"),
            ("turn:2001:db8::1", "IPv6"), ("turn:[2001:db8::1", "closing ]"), ("turn:[::1]x", "bad port"),
        ] {
            #expect {
                try PeerConfiguration.parse(url)
            } throws: { error in
                "\(error)".contains(words)
            }
        }
    }

    /// Every TURN server goes to libnice; of several STUN servers, the first
    /// (libnice asks one); TURN needs its credentials.
    @Test func serversBecomeTheAgentsConfiguration() throws {
        var configuration = PeerConfiguration(iceServers: [
            .init(url: "stun:stun1.lab.test"), .init(url: "stun:203.0.113.2:3479"),
            .init(url: "turn:203.0.113.1", username: "u", credential: "p"),
            .init(url: "turn:203.0.113.1?transport=tcp", username: "u", credential: "p"),
            .init(url: "turns:turn.lab.test:5349", username: "u", credential: "p"),
        ])
        let ice = try configuration.iceConfiguration(controlling: true)
        #expect(ice.stunServer?.host == "stun1.lab.test" && ice.stunServer?.port == 3478)
        #expect(ice.turnServers.map(\.transport) == [.udp, .tcp, .tls])
        #expect(ice.turnServers.last?.host == "turn.lab.test")
        configuration.iceServers = [.init(url: "turn:203.0.113.1")]
        #expect(throws: PeerError.self) { try configuration.iceConfiguration(controlling: true) }
    }
}
