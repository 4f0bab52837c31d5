import Glibc
import RtcRTP
import RtcSRTP
import Testing

@Suite struct SrtpSessionTests {
    func pair(_ profile: SrtpProfile, key: UInt8 = 1) throws -> (SrtpSession, SrtpSession) {
        let masterKey = [UInt8](repeating: key, count: profile.keyLength)
        let salt = [UInt8](repeating: 2, count: profile.saltLength)
        return (
            try SrtpSession(profile: profile, key: masterKey, salt: salt, direction: .outbound),
            try SrtpSession(profile: profile, key: masterKey, salt: salt, direction: .inbound)
        )
    }

    func rtp(_ sequence: UInt16, payload: [UInt8] = Array("opaque media payload".utf8)) -> [UInt8] {
        RtpPacket(
            payloadType: 96, sequenceNumber: sequence, timestamp: UInt32(sequence) * 3000, ssrc: 0xCAFE,
            payload: payload
        )
        .serialized()
    }

    @Test(arguments: SrtpProfile.allCases) func rtpRoundTripsAndIsEncrypted(_ profile: SrtpProfile) throws {
        let (sender, receiver) = try pair(profile)
        for sequence: UInt16 in 1...50 {
            let plain = rtp(sequence)
            let protected = try sender.protectRtp(plain)
            #expect(protected.count == plain.count + (profile == .aeadAes128Gcm ? 16 : 10))
            #expect(Array(protected.prefix(12)) == Array(plain.prefix(12)))  // header in the clear
            #expect(Array(protected[12..<plain.count]) != Array(plain[12...]))
            #expect(try receiver.unprotectRtp(protected) == plain)
        }
    }

    @Test(arguments: SrtpProfile.allCases) func rtcpRoundTrips(_ profile: SrtpProfile) throws {
        let (sender, receiver) = try pair(profile)
        let plain = RtcpPacket.pli(senderSsrc: 1, mediaSsrc: 2).serialized()
        let protected = try sender.protectRtcp(plain)
        #expect(protected.count > plain.count)
        #expect(try receiver.unprotectRtcp(protected) == plain)
    }

    @Test func aReplayedPacketIsDropped() throws {
        let (sender, receiver) = try pair(.aes128CmHmacSha1_80)
        let protected = try sender.protectRtp(rtp(7))
        _ = try receiver.unprotectRtp(protected)
        #expect(throws: SrtpSession.SrtpFailure.replayed) { try receiver.unprotectRtp(protected) }
        // A later packet is still fine.
        #expect(try receiver.unprotectRtp(try sender.protectRtp(rtp(8))) == rtp(8))
    }

    @Test(arguments: SrtpProfile.allCases) func tamperingOrAWrongKeyFailsAuthentication(_ profile: SrtpProfile) throws {
        let (sender, receiver) = try pair(profile)
        var protected = try sender.protectRtp(rtp(1))
        protected[protected.count - 12] ^= 0x01
        #expect(throws: SrtpSession.SrtpFailure.authenticationFailed) { try receiver.unprotectRtp(protected) }
        let (_, stranger) = try pair(profile, key: 9)
        #expect(throws: SrtpSession.SrtpFailure.authenticationFailed) {
            try stranger.unprotectRtp(try sender.protectRtp(rtp(2)))
        }
    }

    @Test func badKeysAndShortPacketsAreErrors() throws {
        #expect(throws: SrtpSession.SrtpFailure.badKey) {
            try SrtpSession(
                profile: .aeadAes128Gcm, key: [1], salt: [UInt8](repeating: 0, count: 12), direction: .inbound)
        }
        let (sender, _) = try pair(.aes128CmHmacSha1_80)
        #expect(throws: SrtpSession.SrtpFailure.malformed) { try sender.protectRtp([0x80, 96]) }
    }

    @Test func keyingMaterialSplitsPerRFC5764() throws {
        let material = (0..<60).map { UInt8($0) }
        let client = try #require(SrtpKeys(keyingMaterial: material, profile: .aes128CmHmacSha1_80, isClient: true))
        let server = try #require(SrtpKeys(keyingMaterial: material, profile: .aes128CmHmacSha1_80, isClient: false))
        #expect(client.localKey == Array(0..<16) && client.remoteKey == Array(16..<32))
        #expect(client.localSalt == Array(32..<46) && client.remoteSalt == Array(46..<60))
        #expect(server.localKey == client.remoteKey && server.localSalt == client.remoteSalt)
        #expect(SrtpKeys(keyingMaterial: material, profile: .aeadAes128Gcm, isClient: true) == nil)
        #expect(SrtpProfile.aeadAes128Gcm.keyingMaterialLength == 56)
    }
}

/// libsrtp built on NSS (Debian's) opens an NSS context per cipher; NSS must
/// stay loaded when the last session goes, or it is unloaded and reloaded.
@Suite struct SrtpNssTests {
    @Test func nssStaysInitialisedWhenTheSessionsAreGone() throws {
        typealias IsInitialized = @convention(c) () -> Int32
        guard let symbol = dlsym(nil, "NSS_IsInitialized") else { return }  // libsrtp without NSS
        do {
            let key = [UInt8](repeating: 7, count: 16)
            let salt = [UInt8](repeating: 9, count: 14)
            _ = try SrtpSession(profile: .aes128CmHmacSha1_80, key: key, salt: salt, direction: .outbound)
        }
        #expect(unsafeBitCast(symbol, to: IsInitialized.self)() != 0)
    }
}
