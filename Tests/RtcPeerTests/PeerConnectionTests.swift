import Foundation
import RtcSCTP
import TestSupport
import Testing

@testable import RtcPeer

/// Two peer connections in one process on 127.0.0.1, signaling by hand.
struct LoopbackCall {
    let offerer: PeerConnection
    let answerer: PeerConnection

    static let loopback = PeerConfiguration(localAddresses: ["127.0.0.1"])

    init() throws {
        offerer = try PeerConnection(configuration: Self.loopback)
        answerer = try PeerConnection(configuration: Self.loopback)
    }

    /// Offer/answer plus trickled candidates; returns when both are connected (or not, after 10 s).
    func connect(tamperAnswer: ((String) -> String)? = nil) async throws -> Bool {
        let offererEvents = await offerer.events()
        let answererEvents = await answerer.events()
        let forwardA = Task { [answerer] in await Self.trickle(offererEvents, to: answerer) }
        let forwardB = Task { [offerer] in await Self.trickle(answererEvents, to: offerer) }
        defer {
            forwardA.cancel()
            forwardB.cancel()
        }
        let offer = try await offerer.createOffer()
        try await offerer.setLocalDescription(offer)
        try await answerer.setRemoteDescription(offer, type: .offer)
        let answer = try await answerer.createAnswer()
        try await answerer.setLocalDescription(answer)
        try await offerer.setRemoteDescription(tamperAnswer?(answer) ?? answer, type: .answer)
        async let a = Self.connected(offerer)
        async let b = Self.connected(answerer)
        let (first, second) = await (a, b)
        return first && second
    }

    static func trickle(_ events: AsyncStream<PeerEvent>, to target: PeerConnection) async {
        for await event in events {
            if case .localCandidate(let candidate, _, _) = event { try? await target.addIceCandidate(candidate) }
        }
    }

    static func connected(_ peer: PeerConnection) async -> Bool {
        for _ in 0..<1000 {
            switch await peer.connectionState {
            case .connected: return true
            case .failed, .closed: return false
            default: try? await Task.sleep(for: .milliseconds(10))  // polling the state, bounded
            }
        }
        return false
    }

    /// A second offer/answer on the live connection (candidates ride in the SDP on a restart).
    func renegotiate(iceRestart: Bool = false) async throws {
        let offer = try await offerer.createOffer(iceRestart: iceRestart)
        try await offerer.setLocalDescription(offer)
        try await answerer.setRemoteDescription(offer, type: .offer)
        let answer = try await answerer.createAnswer()
        try await answerer.setLocalDescription(answer)
        try await offerer.setRemoteDescription(answer, type: .answer)
    }

    func close() async {
        await offerer.close()
        await answerer.close()
    }

    /// The offerer opens a data channel and the two connect: both ends of the
    /// channel once it is open (bounded waits; nil on failure).
    func connectWithChannel(label: String = "data") async throws -> (local: DataChannel, remote: DataChannel)? {
        let channel = await offerer.createDataChannel(DataChannelParameters(label: label))
        let answererEvents = await answerer.events()
        let remoteChannel = Task {
            await answererEvents.first(within: .seconds(10)) { event -> DataChannel? in
                if case .dataChannel(let channel) = event { return channel }
                return nil
            }
        }
        guard try await connect(),
            await channel.events.first(within: .seconds(10), { $0 == .open ? true : nil }) == true,
            let remote = await remoteChannel.value
        else { return nil }
        return (channel, remote)
    }
}

extension DataChannel {
    /// The next text message on the channel (nil after 5 s).
    func nextText() async -> String? {
        await events.first(within: .seconds(5)) { event -> String? in
            if case .text(let text) = event { return text }
            return nil
        }
    }
}

extension PeerConnection {
    /// Keeps the actor busy, as a slow moment would (tests only); `started` is called on entry.
    func occupy(for seconds: Double, started: @Sendable () -> Void) {
        started()
        Thread.sleep(forTimeInterval: seconds)
    }
}

@Suite(.serialized) struct PeerConnectionTests {
    @Test func aMessageSentAsAChannelOpensArrivesWhileThePeersActorIsBusy() async throws {
        let call = try LoopbackCall()
        _ = await call.offerer.createDataChannel(DataChannelParameters(label: "first"))
        #expect(try await call.connect())
        let answererEvents = await call.answerer.events()
        // The answerer's actor is busy when the new channel's DCEP open and the
        // message right behind it arrive: both are handled on the SCTP queue.
        let (begun, begin) = AsyncStream<Void>.makeStream()
        let busy = Task { await call.answerer.occupy(for: 0.5) { begin.yield() } }
        #expect(await begun.first(within: .seconds(5)) { _ in true } == true)
        let channel = await call.offerer.createDataChannel(DataChannelParameters(label: "late"))
        #expect(await channel.events.first(within: .seconds(5)) { $0 == .open ? true : nil } == true)
        try channel.send("right away")
        await busy.value
        let remote = await answererEvents.first(within: .seconds(5)) { event -> DataChannel? in
            if case .dataChannel(let channel) = event, channel.label == "late" { return channel }
            return nil
        }
        #expect(await remote?.nextText() == "right away")
        await call.close()
    }

    /// A channel asked for after `close()` is closed at once: nothing would
    /// ever open it, and a file waiting for it hung (a call hung up as a
    /// transfer began, once in a hundred hang-ups under load).
    @Test func aChannelMadeAfterCloseIsClosedAtOnce() async throws {
        let peer = try PeerConnection(configuration: LoopbackCall.loopback)
        await peer.close()
        let channel = await peer.createDataChannel(DataChannelParameters(label: "late"))
        #expect(channel.readyState == .closed)
        let first = await channel.events.first(within: .seconds(1)) { $0 }
        #expect(first == .closed)
    }

    @Test func dataChannelOpensAndEchoes() async throws {
        let call = try LoopbackCall()
        let channel = await call.offerer.createDataChannel(DataChannelParameters(label: "data"))
        let answererEvents = await call.answerer.events()
        let remoteChannel = Task {
            await answererEvents.first(within: .seconds(10)) { event -> DataChannel? in
                if case .dataChannel(let channel) = event { return channel }
                return nil
            }
        }
        let started = ContinuousClock.now
        #expect(try await call.connect())
        print("peer connection set up in \(ContinuousClock.now - started)")  // informational
        let opened = await channel.events.first(within: .seconds(10)) { $0 == .open ? true : nil }
        #expect(opened == true)
        let remote = try #require(await remoteChannel.value)
        #expect(remote.label == "data")

        try channel.send("hello")
        #expect(await remote.nextText() == "hello")
        try remote.send([1, 2, 3])
        let echoed = await channel.events.first(within: .seconds(5)) { event -> [UInt8]? in
            if case .binary(let bytes) = event { return bytes }
            return nil
        }
        #expect(echoed == [1, 2, 3])
        let stats = await call.offerer.stats()
        #expect(stats.bytesSent > 0 && stats.bytesReceived > 0)
        #expect(stats.selectedPair?.local.contains("127.0.0.1") == true)
        await call.close()
        #expect(
            await channel.events.first(within: .seconds(2)) { $0 == .closed ? true : nil } != nil
                || channel.readyState == .closed)
    }

    @Test func rtpFlowsBothWaysOnAudioAndVideo() async throws {
        let call = try LoopbackCall()
        let audio = await call.offerer.addTransceiver(.audio)
        let video = await call.offerer.addTransceiver(.video)
        #expect(try await call.connect())
        let answererTransceivers = await call.answerer.transceiverInfos
        #expect(answererTransceivers.map(\.mid) == [audio.mid, video.mid])
        #expect(answererTransceivers.first?.codec?.name.lowercased() == "opus")

        let atAnswerer = await call.answerer.receivedRtp(mid: video.mid)
        let atOfferer = await call.offerer.receivedRtp(mid: audio.mid)
        for index in 0..<5 {
            try call.offerer.sendRtp(
                mid: video.mid, payload: [UInt8](repeating: UInt8(index), count: 900), timestamp: UInt32(index) * 3000)
            try call.answerer.sendRtp(
                mid: audio.mid, payload: [0xF8, UInt8(index)], timestamp: UInt32(index) * 960)
        }
        let video4 = await atAnswerer.first(within: .seconds(5)) { $0.packet.payload.first == 4 ? $0 : nil }
        #expect(video4?.packet.payload.count == 900 && video4?.mid == video.mid)
        let audio4 = await atOfferer.first(within: .seconds(5)) { $0.packet.payload == [0xF8, 4] ? $0 : nil }
        #expect(audio4?.packet.payloadType == 111)
        await call.close()
        #expect(throws: PeerError.closed) { try call.offerer.sendRtp(mid: video.mid, payload: [1], timestamp: 0) }
    }

    @Test func aTamperedFingerprintFailsTheConnection() async throws {
        let call = try LoopbackCall()
        _ = await call.offerer.createDataChannel(DataChannelParameters(label: "data"))
        let connected = try await call.connect { answer in
            // Flip one hex digit of the answerer's fingerprint.
            guard let range = answer.range(of: "a=fingerprint:sha-256 ") else { return answer }
            var text = answer
            let index = range.upperBound
            text.replaceSubrange(index...index, with: text[index] == "A" ? "B" : "A")
            return text
        }
        #expect(!connected)
        #expect(await call.offerer.connectionState == .failed)
        #expect(await call.offerer.failureReason?.contains("fingerprint") == true)
        await call.close()
    }

    /// Renegotiation on a live connection: the offerer adds a video section,
    /// and RTP flows on it; then an ICE restart changes both sides'
    /// credentials while the data channel keeps its session.
    @Test func renegotiationAddsVideoAndIceRestartKeepsTheChannel() async throws {
        let call = try LoopbackCall()
        let (channel, remote) = try #require(try await call.connectWithChannel())

        let video = await call.offerer.addTransceiver(.video)
        try await call.renegotiate()
        #expect(await call.answerer.transceiverInfos.map(\.mid) == [video.mid])
        let atAnswerer = await call.answerer.receivedRtp(mid: video.mid)
        try call.offerer.sendRtp(mid: video.mid, payload: [9, 9, 9], timestamp: 3000)
        #expect(await atAnswerer.first(within: .seconds(5)) { $0.packet.payload == [9, 9, 9] ? true : nil } == true)

        let before = try #require(Self.ufrag(await call.offerer.currentLocalDescription()))
        try await call.renegotiate(iceRestart: true)
        let after = try #require(Self.ufrag(await call.offerer.currentLocalDescription()))
        #expect(before != after)
        let offererUp = await LoopbackCall.connected(call.offerer)
        let answererUp = await LoopbackCall.connected(call.answerer)
        #expect(offererUp && answererUp)
        // The same SCTP association and DTLS session carry on over the restarted ICE session.
        try channel.send("after restart")
        #expect(await remote.nextText() == "after restart")
        await call.close()
    }

    /// An authentic RTCP packet that does not parse (a sender report cut to
    /// its SSRC) is counted and dropped; the connection goes on.
    @Test func anAuthenticButMalformedPacketIsCounted() async throws {
        let call = try LoopbackCall()
        let audio = await call.offerer.addTransceiver(.audio)
        #expect(try await call.connect())
        let received = await call.answerer.receivedRtp(mid: audio.mid)
        #expect(await call.answerer.stats().malformedDropped == 0)
        #expect(call.offerer.transport.sendRtcp([.other(type: 200, count: 0, body: [0, 0, 0, 1])]))
        let counted = await eventually(within: .seconds(5)) { await call.answerer.stats().malformedDropped == 1 }
        #expect(counted)
        #expect(await call.answerer.stats().srtpDropped == 0)
        try call.offerer.sendRtp(mid: audio.mid, payload: [0xF8, 9], timestamp: 960)
        #expect(await received.first(within: .seconds(5)) { $0.packet.payload } == [0xF8, 9])
        await call.close()
    }

    /// A captured SRTP packet delivered a second time is dropped by the
    /// receiver's replay window, and the application sees it once.
    @Test func aReplayedSrtpPacketIsDropped() async throws {
        let call = try LoopbackCall()
        let audio = await call.offerer.addTransceiver(.audio)
        let captured = Captured()
        call.offerer.transport.sentDatagramTap = { datagram in
            // RTP (not RTCP) of the audio section: payload type 111 in byte 1.
            if datagram.count > 12, datagram[0] >> 6 == 2, datagram[1] & 0x7F == 111 { captured.keep(datagram) }
        }
        #expect(try await call.connect())
        let received = await call.answerer.receivedRtp(mid: audio.mid)
        try call.offerer.sendRtp(mid: audio.mid, payload: [0xF8, 1, 2, 3], timestamp: 960)
        #expect(
            await received.first(within: .seconds(5)) { $0.packet.payload == [0xF8, 1, 2, 3] ? true : nil } == true)
        let replay = try #require(captured.first)
        let droppedBefore = await call.answerer.stats().srtpDropped
        call.answerer.transport.receive(replay)
        #expect(await call.answerer.stats().srtpDropped == droppedBefore + 1)
        try call.offerer.sendRtp(mid: audio.mid, payload: [0xF8, 4], timestamp: 1920)
        // The next packet the application sees is the new one, not the replay.
        #expect(await received.first(within: .seconds(5)) { $0.packet.payload } == [0xF8, 4])
        await call.close()
    }

    static func ufrag(_ sdp: String?) -> String? {
        sdp?.split(whereSeparator: \.isNewline).first { $0.hasPrefix("a=ice-ufrag:") }.map(String.init)
    }
}

/// Datagrams a test captured from a transport's send path.
final class Captured: @unchecked Sendable {
    private let lock = NSLock()
    private var datagrams: [[UInt8]] = []
    func keep(_ datagram: [UInt8]) { lock.withLock { datagrams.append(datagram) } }
    var first: [UInt8]? { lock.withLock { datagrams.first } }
}
