import Foundation
import RtcPeer
import TestSupport
import Testing

/// Our peer connection (in this process) against aiortc (a child process):
/// RTP on an audio and a video section, both ways. aiortc sends its test tone
/// and test pattern; we send opaque payloads (codecs arrive with the media layer);
/// a NACK of ours is answered on aiortc's RTX stream.
@Suite(.serialized, .timeLimit(.minutes(3))) struct AiortcMediaTests {
    struct Signal: Codable {
        struct Item: Codable {
            var sdp: String
            var sdpMLineIndex: Int?
            var sdpMid: String?
        }
        var type: String
        var sdp: String?
        var candidates: [Item]?
    }

    @Test func rtpFlowsBothWaysOnAudioAndVideo() async throws {
        let root = temporaryDirectory("aio-media")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let peer = try PeerConnection(configuration: PeerConfiguration(localAddresses: ["127.0.0.1"]))
        let audio = await peer.addTransceiver(.audio)
        let video = await peer.addTransceiver(.video)
        _ = await peer.createDataChannel(DataChannelParameters(label: "data"))
        let events = await peer.events()
        let answer = AsyncStream<String>.makeStream()
        let aiortc = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            arguments: [
                "python3", ChildProcess.aiortcPeer, "--loopback", "answer", "--media", "--run-for", "4", "--stats",
                root + "/theirs.json",
            ],
            onLine: { line in answer.continuation.yield(line) })
        let trickle = Task {
            for await event in events {
                if case .localCandidate(let candidate, let mid, let index) = event {
                    let signal = Signal(
                        type: "candidate", candidates: [.init(sdp: candidate, sdpMLineIndex: index, sdpMid: mid)])
                    aiortc.writeLine(String(decoding: try! JSONEncoder().encode(signal), as: UTF8.self))
                }
            }
        }
        defer { trickle.cancel() }
        let offer = try await peer.createOffer()
        try await peer.setLocalDescription(offer)
        aiortc.writeLine(String(decoding: try JSONEncoder().encode(Signal(type: "offer", sdp: offer)), as: UTF8.self))
        let answerSdp = await answer.stream.first(within: .seconds(20)) { line -> String? in
            guard let data = line.data(using: .utf8), let signal = try? JSONDecoder().decode(Signal.self, from: data),
                signal.type == "answer"
            else { return nil }
            return signal.sdp
        }
        try await peer.setRemoteDescription(
            try #require(answerSdp, "no answer: \(aiortc.stderr.suffix(500))"), type: .answer)

        let fromAudio = await peer.receivedRtp(mid: audio.mid)
        let fromVideo = await peer.receivedRtp(mid: video.mid)
        let audioPacket = await fromAudio.first(within: .seconds(15)) { $0 }
        let videoPacket = await fromVideo.first(within: .seconds(15)) { $0 }
        #expect(audioPacket != nil && videoPacket != nil, "aiortc: \(aiortc.stderr.suffix(500))")
        #expect(audioPacket?.packet.payloadType == 111)
        // A NACK for a packet just received: aiortc answers on its RTX stream
        // (RFC 4588, agreed in its answer), and we hand on the original.
        let recent = await fromVideo.first(within: .seconds(5)) { $0 }
        if let recent {
            await peer.sendNack(
                mid: video.mid, mediaSsrc: recent.packet.ssrc, sequences: [recent.packet.sequenceNumber])
        }
        let repaired = await fromVideo.first(within: .seconds(5)) {
            $0.packet.sequenceNumber == recent?.packet.sequenceNumber ? $0 : nil
        }
        #expect(repaired?.packet.payload == recent?.packet.payload && repaired?.packet.payloadType == 96)
        #expect(await peer.stats().rtxPacketsReceived >= 1)
        for index in 0..<100 {
            try peer.sendRtp(mid: audio.mid, payload: [0xF8, 0xFF, 0xFE], timestamp: UInt32(index) * 960)
            try peer.sendRtp(
                mid: video.mid, payload: [0x90, 0x80, UInt8(index & 0x7F)] + [UInt8](repeating: 0, count: 200),
                timestamp: UInt32(index) * 3000, marker: true)
            try await Task.sleep(for: .milliseconds(10))  // pacing like real media
        }
        #expect(await aiortc.waitForExit(timeout: .seconds(20)) == 0)
        let stats = try #require(json(try? String(contentsOfFile: root + "/theirs.json", encoding: .utf8)))
        let inbound = try #require(stats["inbound"] as? [String: Int])
        #expect((inbound["audio"] ?? 0) >= 50 && (inbound["video"] ?? 0) >= 50, "aiortc received \(inbound)")
        await peer.close()
    }
}
