import RtcSDP
import TestSupport
import Testing

/// Descriptions a hostile or broken peer may send: refused with a clear reason.
@Suite struct HostileSDPTests {
    @Test func theNumberOfMediaSectionsIsBounded() throws {
        #expect(try SessionDescription(parsing: SyntheticSDP.offer(sections: 256)).media.count == 256)
        #expect {
            try SessionDescription(parsing: SyntheticSDP.offer(sections: 257))
        } throws: { error in
            "\(error)".contains("more than 256 media sections")
        }
    }

    @Test(arguments: ["md5", "md2", "sha-224", "x-unknown"])
    func weakOrUnknownFingerprintHashesAreRefused(_ hash: String) {
        let bytes = Array(repeating: "AB", count: 16).joined(separator: ":")
        #expect {
            try Fingerprint(parsing: "\(hash) \(bytes)")
        } throws: { error in
            "\(error)".contains("fingerprint hash \(hash) is not accepted") && "\(error)".contains("sha-256")
        }
    }

    @Test func acceptedFingerprintHashesParse() throws {
        for (hash, size) in Fingerprint.accepted {
            let bytes = Array(repeating: "0F", count: size).joined(separator: ":")
            #expect(try Fingerprint(parsing: "\(hash.uppercased()) \(bytes)").bytes.count == size)
        }
        #expect(throws: SDPError.self) { try Fingerprint(parsing: "sha-256 AB:CD") }
    }
}

/// Inputs the fuzzer found that crashed the parser (each a trap, now an error).
@Suite struct FuzzFoundSDPTests {
    @Test(arguments: ["a=ssrc:", "a=ssrc: ", "a=extmap:/ urn:x", "a=extmap:/"])
    func emptyFieldsAreErrorsNotTraps(_ line: String) {
        let text = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n\(line)\r\n"
        #expect(throws: SDPError.self) { try SessionDescription(parsing: text) }
    }
}
