import CNice
import COpenSSL
import COpus
import CShimGLib
import CShimOpus
import CSodium
import CSrtp
import CToxcore
import CUsrsctp
import CVpx
import Testing

/// Every C module links and answers a real call, so a missing or
/// mismatched system package fails here with the library's name.
@Suite struct CLibraryLinkTests {
    @Test func toxcoreIsTheDebianVersion() {
        #expect(tox_version_major() == 0)
        #expect(tox_version_minor() >= 2)
        #expect(tox_public_key_size() == 32)
        #expect(tox_address_size() == 38)
    }

    @Test func sodiumInitialises() {
        #expect(sodium_init() >= 0)
        #expect(crypto_sign_ed25519_bytes() == 64)
    }

    @Test func openSSLIsVersion3() {
        #expect(OpenSSL_version_num() >= 0x3000_0000)
    }

    @Test func srtpReportsItsVersion() {
        // srtp_init is process-wide and belongs to the SRTP layer.
        let version = String(cString: srtp_get_version_string())
        #expect(version.contains("2."))
    }

    @Test func usrsctpAnswersASysctl() {
        // usrsctp_init is process-wide and belongs to the SCTP layer; a sysctl
        // round trip proves the library is linked without initialising it.
        #expect(usrsctp_sysctl_set_sctp_sendspace(262_144) == 0)
        #expect(usrsctp_sysctl_get_sctp_sendspace() == 262_144)
    }

    @Test func niceCreatesAnAgentAndShimSetsAProperty() {
        let context = g_main_context_new()
        defer { g_main_context_unref(context) }
        guard let agent = nice_agent_new_full(context, NICE_COMPATIBILITY_RFC5245, NICE_AGENT_OPTION_ICE_TRICKLE)
        else {
            Issue.record("nice_agent_new_full returned NULL")
            return
        }
        cshim_g_object_set_bool(UnsafeMutableRawPointer(agent), "upnp", false)
        #expect(cshim_g_object_get_bool(UnsafeMutableRawPointer(agent), "upnp") == false)
        cshim_g_object_set_bool(UnsafeMutableRawPointer(agent), "upnp", true)
        #expect(cshim_g_object_get_bool(UnsafeMutableRawPointer(agent), "upnp") == true)
        g_object_unref(UnsafeMutableRawPointer(agent))
    }

    @Test func opusEncoderTakesShimControls() throws {
        var error: Int32 = 0
        let encoder = opus_encoder_create(48000, 2, OPUS_APPLICATION_VOIP, &error)
        defer { opus_encoder_destroy(encoder) }
        #expect(error == OPUS_OK)
        #expect(cshim_opus_set_bitrate(encoder, 32000) == OPUS_OK)
        #expect(cshim_opus_set_inband_fec(encoder, true) == OPUS_OK)
        #expect(cshim_opus_set_dtx(encoder, false) == OPUS_OK)
        var lookahead: Int32 = 0
        #expect(cshim_opus_get_lookahead(encoder, &lookahead) == OPUS_OK)
        #expect(lookahead > 0)
    }

    @Test func vpxHasVP8() {
        let version = String(cString: vpx_codec_version_str())
        #expect(!version.isEmpty)
        #expect(vpx_codec_vp8_cx() != nil)
        #expect(vpx_codec_vp8_dx() != nil)
    }
}
