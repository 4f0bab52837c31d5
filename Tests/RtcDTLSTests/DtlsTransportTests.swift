import RtcDTLS
import RtcSRTP
import Testing

/// Two DTLS endpoints in one process, datagrams passed by hand.
struct DtlsPair {
    let client: DtlsTransport
    let server: DtlsTransport
    var clientEvents: [DtlsTransport.Event] = []
    var serverEvents: [DtlsTransport.Event] = []

    init(
        clientTrusts: [UInt8]? = nil, serverTrusts: [UInt8]? = nil,
        serverProfiles: [SrtpProfile] = [.aeadAes128Gcm, .aes128CmHmacSha1_80]
    ) throws {
        let clientCertificate = try DtlsCertificate()
        let serverCertificate = try DtlsCertificate()
        client = try DtlsTransport(
            role: .client, certificate: clientCertificate,
            remoteFingerprints: [.init(algorithm: "sha-256", bytes: clientTrusts ?? serverCertificate.sha256)])
        server = try DtlsTransport(
            role: .server, certificate: serverCertificate,
            remoteFingerprints: [.init(algorithm: "sha-256", bytes: serverTrusts ?? clientCertificate.sha256)],
            srtpProfiles: serverProfiles)
    }

    /// Delivers datagrams back and forth until neither side has more, dropping those `drop` rejects.
    mutating func run(_ first: [[UInt8]], toServer: Bool = true, drop: (Int) -> Bool = { _ in false }) {
        var queue = first.map { (toServer, $0) }
        var count = 0
        while !queue.isEmpty, count < 100 {
            let (forServer, datagram) = queue.removeFirst()
            count += 1
            if drop(count) { continue }
            let (replies, events) = forServer ? server.receive(datagram) : client.receive(datagram)
            if forServer { serverEvents += events } else { clientEvents += events }
            queue += replies.map { (!forServer, $0) }
        }
    }
}

@Suite struct DtlsTransportTests {
    @Test func handshakeExportsMatchingSrtpKeysAndCarriesData() throws {
        var pair = try DtlsPair()
        pair.run(pair.client.start())
        guard case .connected(let clientProfile, let clientKeys?)? = pair.clientEvents.first,
            case .connected(let serverProfile, let serverKeys?)? = pair.serverEvents.first
        else {
            Issue.record("not connected: \(pair.clientEvents) / \(pair.serverEvents)")
            return
        }
        #expect(clientProfile == .aeadAes128Gcm && serverProfile == .aeadAes128Gcm)
        #expect(clientKeys.localKey == serverKeys.remoteKey && clientKeys.localSalt == serverKeys.remoteSalt)
        #expect(clientKeys.remoteKey == serverKeys.localKey && clientKeys.localKey != clientKeys.remoteKey)
        #expect(pair.client.state == .connected && pair.server.state == .connected)

        let big = (0..<1100).map { UInt8($0 & 0xFF) }
        pair.run(try pair.client.send(big))
        #expect(pair.serverEvents.last == .data(big))
        pair.run(try pair.server.send(Array("pong".utf8)), toServer: false)
        #expect(pair.clientEvents.last == .data(Array("pong".utf8)))
    }

    @Test func srtpProfileFollowsWhatBothOffer() throws {
        var pair = try DtlsPair(serverProfiles: [.aes128CmHmacSha1_80])
        pair.run(pair.client.start())
        guard case .connected(let profile, let keys?)? = pair.serverEvents.first else {
            Issue.record("server did not connect")
            return
        }
        #expect(profile == .aes128CmHmacSha1_80 && keys.localSalt.count == 14)
    }

    @Test func aCertificateThatDoesNotMatchTheFingerprintFailsTheConnection() throws {
        var tampered = try DtlsCertificate().sha256
        tampered[0] ^= 0xFF
        var pair = try DtlsPair(clientTrusts: tampered)
        pair.run(pair.client.start())
        #expect(pair.client.state == .failed)
        guard case .failed(.fingerprintMismatch)? = pair.clientEvents.first else {
            Issue.record("expected a fingerprint mismatch, got \(pair.clientEvents)")
            return
        }
        #expect("\(DtlsTransport.DtlsError.fingerprintMismatch("x"))".contains("does not match the fingerprint"))
        #expect(throws: DtlsTransport.DtlsError.notConnected) { try pair.client.send([1]) }
    }

    @Test func theServerChecksTheClientsFingerprintToo() throws {
        var pair = try DtlsPair(serverTrusts: [UInt8](repeating: 0, count: 32))
        pair.run(pair.client.start())
        #expect(pair.server.state == .failed)
    }

    @Test func aLostFlightIsRetransmittedOnTimeout() async throws {
        var pair = try DtlsPair()
        // Lose the server's first flight.
        pair.run(pair.client.start(), drop: { $0 == 2 })
        #expect(pair.client.state == .connecting)
        let wait = try #require(pair.client.timeoutInterval())
        #expect(wait <= .seconds(2))
        try await Task.sleep(for: wait + .milliseconds(20))  // DTLS timers read OpenSSL's own clock
        pair.run(pair.client.handleTimeout())
        #expect(pair.client.state == .connected && pair.server.state == .connected)
    }

    @Test func closeNotifyReachesThePeer() throws {
        var pair = try DtlsPair()
        pair.run(pair.client.start())
        pair.run(pair.client.close())
        #expect(pair.serverEvents.contains(.closed) && pair.server.state == .closed)
    }

    @Test func garbageIsIgnoredAndDemuxClassifiesFirstBytes() throws {
        var pair = try DtlsPair()
        pair.run(pair.client.start())
        pair.run([[23, 254, 253, 0, 1, 0, 0, 0, 0, 0, 9, 0, 3, 1, 2, 3]])
        #expect(pair.server.state == .connected)
        #expect(PacketClass([0, 1]) == .stun && PacketClass([22, 254]) == .dtls)
        #expect(PacketClass([0x80, 96]) == .rtp && PacketClass([100]) == .unknown && PacketClass([]) == .unknown)
    }
}

/// What goes on the wire during a handshake.
@Suite struct DtlsHandshakeWireTests {
    /// The handshake message types in the plaintext (epoch 0) handshake records of `datagrams`.
    static func plaintextHandshakeTypes(_ datagrams: [[UInt8]]) -> [UInt8] {
        var types: [UInt8] = []
        for datagram in datagrams {
            var offset = 0
            while offset + 13 <= datagram.count {
                let length = Int(datagram[offset + 11]) << 8 | Int(datagram[offset + 12])
                let epoch = Int(datagram[offset + 3]) << 8 | Int(datagram[offset + 4])
                if datagram[offset] == 22, epoch == 0, length > 0, offset + 13 < datagram.count {
                    types.append(datagram[offset + 13])
                }
                offset += 13 + length
            }
        }
        return types
    }

    @Test func noSessionTicketIsSent() throws {
        // WebRTC never resumes a session; a ticket only costs the last flight time.
        let pair = try DtlsPair()
        var toServer = pair.client.start()
        var fromServer: [[UInt8]] = []
        for _ in 0..<10 where !toServer.isEmpty {
            let replies = toServer.flatMap { pair.server.receive($0).datagrams }
            fromServer += replies
            toServer = replies.flatMap { pair.client.receive($0).datagrams }
        }
        #expect(pair.client.state == .connected && pair.server.state == .connected)
        let types = Self.plaintextHandshakeTypes(fromServer)
        #expect(types.contains(2) && types.contains(11))  // ServerHello and Certificate were seen
        #expect(!types.contains(4))  // NewSessionTicket
    }
}
