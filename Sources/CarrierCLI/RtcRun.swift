import AsyncExtras
import Foundation
import RtcCalls
import RtcFileTransfer
import RtcMedia
import RtcPeer

/// One `carrier rtc` run: one call with the peer on stdin/stdout, driven by
/// the library's call client like every call and session (offer, answer,
/// candidates, renegotiation, ICE restarts, bye), in the plain WebRTC dialect
/// any peer speaks: no ringing, no accept action, the binary file protocol.
/// This type only decides when the run is done and reports it.
actor RtcRun {
    struct Plan {
        var role: String
        var peer: PeerConfiguration
        var media: CallMedia
        var sendFile: String?
        var trickle: Bool
        var recoveryWindow: Double
        var timeout: Duration
    }

    private let plan: Plan
    private let output: Output
    private let client: CallClient
    private let signaling: SignalingTap
    private var summary: RtcSummary
    private var callId: String?
    private var done = false
    private var finished: CheckedContinuation<Void, Never>?
    private var transferDone = true
    private var mediaDone = true
    private var durationDone = true
    private var wasDisconnected = false
    /// Opens when the call has ended (and closed its connection).
    private let callEnded = AsyncLatch()
    /// Opens once the peer's offer has been answered (or the call ended).
    private let answered = AsyncLatch()

    init(plan: Plan, output: Output) {
        self.plan = plan
        self.output = output
        signaling = SignalingTap(StandardIOSignaling(), output: output)
        var configuration = CallClient.Configuration(peer: plan.peer, confirmRinging: false)
        configuration.alwaysAudio = false
        configuration.announceAccept = false
        configuration.holdCandidates = true
        configuration.trickle = plan.trickle
        configuration.fileProtocol = .binary
        configuration.timeouts.ringing = plan.timeout.inSeconds
        configuration.timeouts.recoveryWindow = plan.recoveryWindow
        client = CallClient(provider: signaling, configuration: configuration)
        summary = RtcSummary(role: plan.role)
        summary.wantedTransfer = plan.sendFile != nil || plan.media.receiveDirectory != nil
    }

    func run() async -> RtcSummary {
        let events = await client.events()
        await client.start()
        // The offerer reads its events once makeCall has named the call: the call
        // may connect while makeCall still waits for the files to open (longer on a
        // cold cache than the 35 ms a loopback call takes), and the stream keeps
        // the events meanwhile.
        let eventsRead = AsyncLatch()
        let eventTask = Task {
            await eventsRead.wait()
            for await event in events { await handle(event) }
        }
        if plan.role != "offer" { eventsRead.open() }
        let signalingEnded = Task {
            await signaling.waitUntilClosed()
            // The end of stdin ends the run, once an offer that came before it is answered.
            if signaling.sawOffer {
                let answered = answered
                _ = await withTimeout(.seconds(5)) { () -> Bool? in
                    await answered.wait()
                    return true
                }
            }
            finish(nil)
        }
        let timeoutTask = Task {
            try? await Task.sleep(for: plan.timeout)
            finish("timed out after \(plan.timeout)")
        }
        let interruptTask = Task {
            await Termination.wait()
            finish("interrupted")
        }
        let statsTask = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                await printLiveStats()
            }
        }
        if plan.role == "offer" {
            // Audio and video sections when there is something to send or to record.
            let records = plan.media.recordDirectory != nil
            var options: [RtcSignal.MediaOption] = []
            if plan.media.sends(.audio) || records { options.append(.audio) }
            if plan.media.sends(.video) || records { options.append(.video) }
            do {
                callId = try await client.makeCall(
                    to: StandardIOSignaling.peer, options: options + [.data], media: plan.media
                ).id
            } catch {
                finish("\(error)")
            }
            eventsRead.open()
        }
        if !done { await withCheckedContinuation { finished = $0 } }
        // Hang up (a bye, unless the peer said it first) and wait for the call to close.
        if let callId {
            if let peer = try? await client.peerStats(callId), let path = peer.path {
                summary.selectedPair = peer.selectedPair
                summary.path = path
            }
            try? await client.endCall(callId)
            let callEnded = callEnded
            _ = await withTimeout(.seconds(5)) { () -> Bool? in
                await callEnded.wait()
                return true
            }
            if let stats = try? await client.mediaStats(callId) {
                summary.sent = stats.sent
                summary.received = stats.received
                summary.rtx = (stats.rtxPacketsSent, stats.rtxPacketsReceived)
            }
            if let call = await client.call(callId) {
                summary.outages = call.outages
                summary.longestOutage = call.longestOutage
            }
        }
        if let webm = plan.media.recordDirectory, plan.media.recordsWebm, FileManager.default.fileExists(atPath: webm) {
            summary.webm = webm
        }
        await client.stop()
        for task in [eventTask, signalingEnded, timeoutTask, interruptTask, statsTask] { task.cancel() }
        return summary
    }

    // MARK: Events

    private func handle(_ event: CallEvent) async {
        switch event {
        case .incoming(let call):
            guard callId == nil else {
                try? await client.busy(call.id)  // one call per run
                return
            }
            callId = call.id
            do { try await client.accept(call.id, media: plan.media) } catch { finish("\(error)") }
        case .stateChanged(let call) where call.id == callId:
            await stateChanged(call)
        case .ended(let call) where call.id == callId:
            callEnded.open()
            answered.open()
            switch (call.endReason, call.endDetail) {
            case (.hangUp?, nil), (.remoteHangUp?, nil): finish(nil)
            default: finish(call.endDetail ?? "the call ended: \(call.endReason?.rawValue ?? "?")")
            }
        case .fileProgress(let id, let progress) where id == callId:
            let percent = progress.total == 0 ? 100 : Int(progress.bytes * 100 / progress.total)
            output.log(
                "\(progress.sending ? "sending" : "receiving") \(progress.name): \(progress.bytes)/\(progress.total) bytes (\(percent)%)"
            )
        case .fileReceived(let id, let outcome) where id == callId:
            summary.transfer = outcome
            summary.sctpPacketSize = try? await client.peerStats(id).sctpPacketSize
            output.log("received \(outcome.name): \(outcome.bytes) bytes, \(outcome.verdict)")
        default:
            break
        }
    }

    private func stateChanged(_ call: Call) async {
        if call.state != .ringing { answered.open() }
        switch call.state {
        case .connected where !summary.connected:
            output.log("connection connected")
            summary.connected = true
            let stats = try? await client.mediaStats(call.id)
            summary.setupMs = stats?.setupMs.map(rounded)
            summary.iceMs = stats?.iceMs.map(rounded)
            let peer = try? await client.peerStats(call.id)
            summary.selectedPair = peer?.selectedPair
            summary.path = peer?.path
            summary.steps = CallSteps.json(call, received: [])
            if let path = peer?.path { output.log("path: \(path)") }
            await started(call.id)
        case .connected where wasDisconnected:
            wasDisconnected = false
            output.log("connection back after \(rounded(call.longestOutage)) s at most")
        case .disconnected:
            wasDisconnected = true
            output.log("connection lost: restarting ICE (for up to \(rounded(plan.recoveryWindow)) s)")
        default:
            break
        }
    }

    /// Once connected: the file to send, the media to wait for, the duration.
    private func started(_ callId: String) async {
        let sendsMedia = plan.media.audio != nil || plan.media.video != nil
        if let path = plan.sendFile {
            transferDone = false
            Task { await send(path, callId: callId) }
        }
        if sendsMedia {
            // Files end (or the duration does); looping files without one go until the peer's bye.
            mediaDone = false
            if !plan.media.loop || plan.media.duration != nil {
                Task {
                    try? await client.waitUntilMediaSent(callId: callId)
                    self.mediaSent()
                }
            }
        }
        if let duration = plan.media.duration {
            durationDone = false
            Task {
                try? await Task.sleep(for: .milliseconds(Int64(duration * 1000)))
                self.durationElapsed()
            }
        }
        checkDone()
    }

    private func send(_ path: String, callId: String) async {
        do {
            let outcome = try await client.sendFile(path, callId: callId)
            summary.transfer = outcome
            summary.sctpPacketSize = try? await client.peerStats(callId).sctpPacketSize
            guard outcome.ok else { return finish("the receiver's SHA-256 does not match") }
            transferDone = true
            checkDone()
        } catch {
            finish("\(error)")
        }
    }

    private func mediaSent() {
        mediaDone = true
        checkDone()
    }

    private func durationElapsed() {
        durationDone = true
        mediaDone = true
        checkDone()
    }

    /// Ends once everything asked for is done. A run with only things to
    /// receive waits for the peer's bye (or the duration).
    private func checkDone() {
        let sendsSomething =
            plan.sendFile != nil || plan.media.audio != nil || plan.media.video != nil || plan.media.duration != nil
        guard summary.connected, sendsSomething, transferDone, mediaDone, durationDone else { return }
        finish(nil)
    }

    /// One line a second on stderr while media flows.
    private func printLiveStats() async {
        guard summary.connected, !done, let callId, let stats = try? await client.mediaStats(callId) else { return }
        if let line = liveStatsLine(stats, peer: try? await client.peerStats(callId)) { output.log(line) }
    }

    private func finish(_ error: String?) {
        guard !done else { return }
        done = true
        if let error, summary.error == nil { summary.error = error }
        finished?.resume()
        finished = nil
    }
}

/// The stdin/stdout signaling, watched on its way to the call client: lines
/// that are not signals and candidates that come before any description are
/// said on stderr, and the end of stdin ends the run.
final class SignalingTap: SignalingProvider, Sendable {
    private let inner: StandardIOSignaling
    private let stream: AsyncStream<SignalingInput>
    private let closed = AsyncLatch()
    private let offered = AsyncLatch()

    init(_ inner: StandardIOSignaling, output: Output) {
        self.inner = inner
        let (stream, continuation) = AsyncStream<SignalingInput>.makeStream()
        self.stream = stream
        let closed = closed
        let offered = offered
        Task {
            var described = false
            var noticed = false
            for await input in await inner.inputs() {
                switch input {
                case .undecodable(let error, _):
                    output.log("ignoring a line that is not a signal: \(error)")
                case .signal(let signal, _):
                    if signal.type == .offer || signal.type == .answer { described = true }
                    if signal.type == .offer { offered.open() }
                    if signal.type == .candidate, !described, !noticed {
                        noticed = true
                        output.log("candidates before any description: held until it comes")
                    }
                case .undelivered:
                    break
                }
                continuation.yield(input)
            }
            continuation.finish()
            closed.open()
        }
    }

    func send(_ signal: RtcSignal, to peer: String) async throws(SignalError) {
        try await inner.send(signal, to: peer)
    }

    func inputs() async -> AsyncStream<SignalingInput> { stream }

    func iceServers() async -> [PeerConfiguration.IceServer] { [] }

    /// The peer sent an offer.
    var sawOffer: Bool { offered.opened }

    /// Returns once stdin has ended.
    func waitUntilClosed() async { await closed.wait() }
}
