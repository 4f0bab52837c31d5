import RtcSDP
import Testing

/// Descriptions a hostile or broken peer may send: refused with a clear reason.
@Suite struct HostileSDPTests {
    static func offer(
        sections: Int, fingerprint: String = "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")
    )
        -> String
    {
        var lines = [
            "v=0", "o=- 1 1 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=fingerprint:\(fingerprint)", "a=ice-ufrag:abcd",
            "a=ice-pwd:abcdefghijklmnopqrstuvwx",
        ]
        for index in 0..<sections {
            lines += [
                "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:\(index)", "a=rtpmap:111 opus/48000/2",
                "a=sendrecv", "a=setup:actpass", "a=rtcp-mux",
            ]
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    @Test func theNumberOfMediaSectionsIsBounded() throws {
        #expect(try SessionDescription(parsing: Self.offer(sections: 256)).media.count == 256)
        #expect {
            try SessionDescription(parsing: Self.offer(sections: 257))
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
