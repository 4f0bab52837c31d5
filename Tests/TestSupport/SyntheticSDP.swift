import Foundation

/// Descriptions made up for tests of hostile input: `sections` minimal Opus
/// sections, and the signal that carries them.
public enum SyntheticSDP {
    public static func offer(
        sections: Int, fingerprint: String = "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")
    ) -> String {
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

    /// The offer as one JSON signaling line for `carrier rtc`.
    public static func offerSignal(sections: Int) -> String {
        let data = try? JSONSerialization.data(withJSONObject: ["type": "offer", "sdp": offer(sections: sections)])
        return String(decoding: data ?? Data(), as: UTF8.self)
    }
}
