import AsyncExtras
import CarrierNode
import CarrierSignaling
import Foundation
import RtcCalls
import RtcCodecs
import RtcMedia
import RtcMediaFiles
import RtcPeer

/// The call part of the demo: Alice calls Bob over the node; media files from
/// media/ flow both ways (Alice: WAV and Y4M, encoded; Bob: Ogg Opus and IVF,
/// passed through), Alice sends a file over the data channel, both record, and
/// the recordings are checked against their sources.
enum DemoCall {
    /// media/ in the working directory, else beside the sources this was built from.
    static func mediaDirectory() -> String? {
        let candidates = [
            FileManager.default.currentDirectoryPath + "/media",
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("media").path,
        ]
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/tone-440-660.wav") }
    }

    static func story(
        alice: Carrier, bob: Carrier, recordings: String, seconds: Double,
        record: (String, String, ContinuousClock.Instant, String) -> Void
    ) async throws -> [String: any Sendable] {
        guard let media = mediaDirectory() else {
            throw CarrierError.invalidArgument("no media/ folder with the test files (run from the repository)")
        }
        var started = ContinuousClock.now
        let loopback = PeerConfiguration(localAddresses: ["127.0.0.1"])
        let aliceProvider = try await CarrierSignalingProvider(carrier: alice)
        let bobProvider = try await CarrierSignalingProvider(carrier: bob)
        let aliceClient = CallClient(
            provider: aliceProvider, configuration: .init(peer: loopback, mayCall: { await aliceProvider.isFriend($0) })
        )
        let bobClient = CallClient(
            provider: bobProvider, configuration: .init(peer: loopback, mayCall: { await bobProvider.isFriend($0) }))
        await aliceClient.start()
        await bobClient.start()
        defer {
            Task {
                await aliceClient.stop()
                await bobClient.stop()
            }
        }
        let aliceEvents = await aliceClient.events()
        let bobEvents = await bobClient.events()
        let aliceDirectory = recordings + "/alice-heard"
        let bobDirectory = recordings + "/bob-heard"
        let call = try await aliceClient.makeCall(
            to: bob.userId.description, options: [.audio, .video, .data],
            media: CallMedia(
                audio: media + "/tone-440-660.wav", video: media + "/testsrc.y4m", loop: true,
                recordDirectory: aliceDirectory))
        guard
            let incoming = await bobEvents.first(
                within: .seconds(30), { event -> Call? in if case .incoming(let c) = event { c } else { nil } })
        else { throw CarrierError.timedOut("the call to reach Bob") }
        try await bobClient.accept(
            incoming.id,
            media: CallMedia(
                audio: media + "/tone.opus", video: media + "/testsrc.ivf", loop: true, recordDirectory: bobDirectory,
                receiveDirectory: recordings + "/bob-received"))
        let connected = await aliceEvents.first(within: .seconds(30)) { event -> Bool? in
            if case .stateChanged(let c) = event, c.state == .connected { return true }
            return nil
        }
        guard connected == true else { throw CarrierError.timedOut("the call to connect") }
        record("callMs", "call connected", started, "offer/answer over Carrier invites, ICE+DTLS on 127.0.0.1")

        let file = recordings + "/demo-file.bin"
        guard let random = FileHandle(forReadingAtPath: "/dev/urandom") else {
            throw CarrierError.invalidArgument("cannot read /dev/urandom")
        }
        try random.read(upToCount: 8 << 20)?.write(to: URL(fileURLWithPath: file))
        try? random.close()
        started = ContinuousClock.now
        let outcome = try await aliceClient.sendFile(file, callId: call.id)
        guard outcome.ok,
            FileManager.default.contentsEqual(atPath: file, andPath: recordings + "/bob-received/demo-file.bin")
        else { throw CarrierError.invalidArgument("the file over the data channel did not arrive intact") }
        let rate = rounded(Double(outcome.bytes) / 1e6 / max(outcome.seconds, 1e-9))
        record("fileMs", "8 MB file sent", started, "over the data channel, SHA-256 checked, \(rate) MB/s")

        started = ContinuousClock.now
        let elapsed = (ContinuousClock.now - started).milliseconds / 1000
        try await Task.sleep(for: .milliseconds(Int64(max(0, seconds - elapsed) * 1000)))
        try await aliceClient.endCall(call.id)
        _ = await bobEvents.first(within: .seconds(10)) { event -> Bool? in
            if case .ended = event { return true }
            return nil
        }
        let aliceStats = try await aliceClient.mediaStats(call.id)
        let bobStats = try await bobClient.mediaStats(call.id)
        record(
            "mediaMs", "media both ways", started,
            "Alice sent \(describe(aliceStats.sent)); Bob sent \(describe(bobStats.sent))")

        started = ContinuousClock.now
        let checks = try verify(
            bobHeard: bobDirectory, aliceHeard: aliceDirectory, media: media)
        record("verifyMs", "recordings checked", started, checks)
        return ["fileMBps": rate, "recordings": recordings, "callId": call.id]
    }

    static func describe(_ stats: [MediaSender.Stats]) -> String {
        stats.map { "\($0.kind) \($0.framesSent) frames" }.joined(separator: " + ")
    }

    /// Bob's recording of Alice: tones and PSNR against the sources. Alice's of
    /// Bob: the VP8 frames exactly as in the IVF source, the Opus tones.
    static func verify(bobHeard: String, aliceHeard: String, media: String) throws -> String {
        let audio = try WavFile(path: bobHeard + "/audio.wav").audio
        let left = MediaAnalysis.tonePower(audio, channel: 0, frequency: 440, skipSeconds: 0.5)
        let right = MediaAnalysis.tonePower(audio, channel: 1, frequency: 660, skipSeconds: 0.5)
        let pictures = try Y4mFile(path: bobHeard + "/video.y4m").frames
        let psnr = MediaAnalysis.meanPsnr(received: pictures, source: try Y4mFile(path: media + "/testsrc.y4m").frames)
        let back = try WavFile(path: aliceHeard + "/audio.wav").audio
        let backTones = MediaAnalysis.tonePower(back, channel: 0, frequency: 440, skipSeconds: 0.5)
        let frames = try IvfFile(path: aliceHeard + "/video.ivf").frames
        let source = try IvfFile(path: media + "/testsrc.ivf").frames
        let identical = !frames.isEmpty && zip(frames, source).allSatisfy { $0.data == $1.data }
        guard left > 0.7, right > 0.7, psnr >= 30, backTones > 0.7, identical else {
            throw CarrierError.invalidArgument(
                "recordings do not match: tones \(left)/\(right)/\(backTones), PSNR \(psnr) dB, IVF identical \(identical)"
            )
        }
        return "440/660 Hz tones found, video PSNR \(rounded(psnr)) dB, \(frames.count) VP8 frames byte-identical"
    }
}
