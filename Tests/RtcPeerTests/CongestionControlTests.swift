import Foundation
import RtcSDP
import TestSupport
import Testing

@testable import RtcPeer

/// Transport-wide congestion control between two of our peers: negotiated in
/// the descriptions, every packet numbered, feedback back every 100 ms, and
/// an estimate that follows the path (through the relay's bottleneck).
@Suite(.serialized) struct CongestionControlTests {
    private func transportCcIds(_ sdp: String) throws -> [Int] {
        try SessionDescription(parsing: sdp).media.flatMap { media in
            media.headerExtensions.filter { $0.uri == CongestionControl.uri }.map(\.id)
        }
    }

    @Test func offeredToEveryMediaSectionAndAnsweredOnlyWhenOffered() async throws {
        let offerer = try PeerConnection(configuration: LoopbackCall.loopback)
        _ = await offerer.addTransceiver(.audio)
        _ = await offerer.addTransceiver(.video)
        let offer = try await offerer.createOffer()
        #expect(try transportCcIds(offer) == [3, 3])
        #expect(offer.contains("a=rtcp-fb:111 transport-cc") && offer.contains("a=rtcp-fb:96 transport-cc"))

        // Answering an offer that has it under another id: the same id back.
        let answerer = try PeerConnection(configuration: LoopbackCall.loopback)
        try await answerer.setRemoteDescription(
            offer.replacingOccurrences(of: "a=extmap:3 ", with: "a=extmap:7 "), type: .offer)
        #expect(try transportCcIds(try await answerer.createAnswer()) == [7, 7])

        // Answering one without it (aiortc offers none): none back, and nothing is numbered.
        let plain = try PeerConnection(configuration: LoopbackCall.loopback)
        let withoutIt = offer.components(separatedBy: "\r\n").filter { !$0.contains(CongestionControl.uri) }
            .joined(separator: "\r\n")
        try await plain.setRemoteDescription(withoutIt, type: .offer)
        let answer = try await plain.createAnswer()
        #expect(try transportCcIds(answer).isEmpty)
        try await plain.setLocalDescription(answer)
        #expect(!plain.congestionIsActive)
        await offerer.close()
        await answerer.close()
        await plain.close()
    }

    /// Three times what a 400 kbit/s link carries: the feedback says so within seconds.
    @Test func feedbackFlowsAndTheEstimateFallsToABottleneck() async throws {
        let call = try RelayedCall()
        let video = await call.offerer.addTransceiver(.video, direction: .sendonly)
        _ = try #require(try await call.connectWithChannel())
        #expect(call.offerer.congestionIsActive && call.answerer.congestionIsActive)
        call.relay.setBottleneck(bitsPerSecond: 400_000, queueMilliseconds: 200)
        let start = ContinuousClock.now
        var timestamp: UInt32 = 0
        while ContinuousClock.now - start < .seconds(6) {
            // A packet every 6-7 ms: pacing a sender, not waiting for an event.
            try call.offerer.sendRtp(
                mid: video.mid, payload: [UInt8](repeating: 0x55, count: 1000), timestamp: timestamp)
            timestamp &+= 540
            try await Task.sleep(for: .milliseconds(6))
        }
        let congestion = try #require(await call.offerer.stats().congestion)
        #expect(congestion.feedbacksReceived >= 20, "\(congestion)")
        #expect(congestion.targetBitrate < 500_000, "\(congestion)")
        let acknowledged = try #require(congestion.acknowledgedBitrate, "\(congestion)")
        #expect((250_000...520_000).contains(acknowledged), "\(congestion)")
        #expect(congestion.roundTripTime != nil)
        // What we sent, counted at our end: this test's sender ignores the target, far above what got through.
        let sent = try #require(congestion.sentBitrate, "\(congestion)")
        #expect(sent > 1.5 * acknowledged, "\(congestion)")
        if ProcessInfo.processInfo.environment["CONGESTION_TRACE"] != nil { print("\(congestion)") }
        await call.close()
    }
}
