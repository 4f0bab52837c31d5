import Foundation
import TestSupport
import Testing

/// `carrier rtc` fed what a hostile peer could send on its signaling input.
@Suite struct HostileInputCommandTests {
    static func offer(sections: Int) -> String {
        var lines = [
            "v=0", "o=- 1 1 IN IP4 127.0.0.1", "s=-", "t=0 0",
            "a=fingerprint:sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":"), "a=ice-ufrag:abcd",
            "a=ice-pwd:abcdefghijklmnopqrstuvwx",
        ]
        for index in 0..<sections {
            lines += [
                "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:\(index)", "a=rtpmap:111 opus/48000/2",
            ]
        }
        let sdp = lines.joined(separator: "\r\n") + "\r\n"
        let data = try? JSONSerialization.data(withJSONObject: ["type": "offer", "sdp": sdp])
        return String(decoding: data ?? Data(), as: UTF8.self)
    }

    @Test func anOfferWithThousandsOfSectionsIsRefusedAtOnce() async throws {
        let process = try CarrierProcess(["rtc", "answer", "--timeout", "30"])
        let started = ContinuousClock.now
        process.writeLine(Self.offer(sections: 2000))
        let code = await process.waitForExit(timeout: .seconds(20))
        #expect(code == 1)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(process.stderr.contains("more than 256 media sections"))
    }

    /// A line past the limit is read and dropped without being held, and the
    /// process goes on reading (here: to the end of its input).
    @Test func anOverlongSignalingLineIsDroppedWithoutHoldingIt() async throws {
        let process = try CarrierProcess(["rtc", "answer", "--timeout", "30"])
        let chunk = String(repeating: "x", count: 1 << 20)
        for _ in 0..<8 { process.write(chunk) }
        process.writeLine("")
        process.writeLine(#"{"type":"candidate","candidates":[{"sdp":"candidate:1 1 udp 1 127.0.0.1 9 typ host"}]}"#)
        process.closeInput()
        #expect(await process.waitForExit(timeout: .seconds(20)) != nil)
        #expect(process.stderr.contains("a line of more than 8388608 bytes (at most 1048576), dropped"))
        #expect(process.stderr.contains("candidates before any description: held"))
    }

    @Test func theTimeoutEndsTheProcessOnTime() async throws {
        let process = try CarrierProcess(["rtc", "answer", "--timeout", "1"])
        let started = ContinuousClock.now
        #expect(await process.waitForExit(timeout: .seconds(15)) == 1)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(process.stderr.contains("timed out after 1"))
    }
}
