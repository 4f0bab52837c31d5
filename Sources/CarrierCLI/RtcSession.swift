import AsyncExtras
import Foundation
import RtcCalls
import RtcFileTransfer
import RtcMedia
import RtcPeer
import RtcSCTP

/// One `carrier rtc` run: a peer connection, its signaling on stdin/stdout,
/// and what it does on the data channel.
actor RtcSession {
    struct Summary {
        var role: String
        var connected = false
        var setupMs: Double?
        /// Of setupMs, the part until ICE connected (the rest is the DTLS handshake).
        var iceMs: Double?
        var transfer: FileTransferEndpoint.Outcome?
        var selectedPair: (local: String, remote: String)?
        var error: String?
        var wantedTransfer = false
        /// The one-file recording, when there is one.
        var webm: String?
        /// Times the connection was lost and came back (ICE restarts), and the longest outage (s).
        var outages = 0
        var longestOutage = 0.0
        var sent: [MediaSender.Stats] = []
        var received: [MediaReceiver.Stats] = []

        var succeeded: Bool { connected && error == nil && (!wantedTransfer || transfer?.ok == true) }

        var json: [String: any Sendable] {
            var object: [String: any Sendable] = ["role": role, "connected": connected, "ok": succeeded]
            if let setupMs { object["setupMs"] = setupMs }
            if let iceMs { object["iceMs"] = iceMs }
            if let transfer {
                object["bytes"] = Int(transfer.bytes)
                object["sha256"] = transfer.sha256
                object["MBps"] = rounded(Double(transfer.bytes) / 1e6 / max(transfer.seconds, 1e-9))
                object["transferOk"] = transfer.ok
                if let announced = transfer.announcedBytes { object["announcedBytes"] = Int(announced) }
                if transfer.isIncomplete { object["incomplete"] = true }
                if let path = transfer.path { object["path"] = path }
            }
            if let selectedPair {
                object["selectedPair"] = ["local": selectedPair.local, "remote": selectedPair.remote]
            }
            if !sent.isEmpty || !received.isEmpty {
                object["media"] =
                    [
                        "sent": sent.map(\.json), "received": received.map(\.json),
                    ] as [String: any Sendable]
                object["recordings"] = received.flatMap(\.recordings) + (webm.map { [$0] } ?? [])
            }
            if outages > 0 {
                object["outages"] = outages
                object["longestOutage"] = rounded(longestOutage)
            }
            if let error { object["error"] = error }
            return object
        }

        var text: String {
            var lines = [
                "\(role): \(connected ? "connected" : "not connected")" + (setupMs.map { " in \($0) ms" } ?? "")
            ]
            if let transfer {
                let rate = rounded(Double(transfer.bytes) / 1e6 / max(transfer.seconds, 1e-9))
                lines.append(
                    "\(transfer.name): \(transfer.bytes) bytes, \(rate) MB/s, "
                        + (transfer.ok || !transfer.isIncomplete
                            ? "sha256 \(transfer.sha256) \(transfer.ok ? "ok" : "MISMATCH")" : transfer.verdict)
                )
            }
            for stats in sent {
                lines.append(
                    "sent \(stats.kind): \(stats.framesSent) frames, \(stats.packetsSent) packets, \(stats.bytesSent) bytes, \(rounded(stats.seconds)) s"
                )
            }
            for stats in received where stats.packetsReceived > 0 {
                lines.append(
                    "received \(stats.kind): \(stats.framesDecoded) frames decoded, \(stats.packetsReceived) packets, \(stats.packetsLost) lost, \(rounded(stats.seconds)) s"
                        + (stats.recordings.isEmpty ? "" : " → \(stats.recordings.joined(separator: ", "))"))
            }
            if outages > 0 {
                lines.append("connection lost \(outages) time(s), back after at most \(rounded(longestOutage)) s")
            }
            if let webm { lines.append("recorded into \(webm)") }
            if let error { lines.append("error: \(error)") }
            return lines.joined(separator: "\n")
        }
    }

    private let peer: PeerConnection
    private let role: String
    private let sendFile: String?
    private let receiveDirectory: String?
    private let echo: Bool
    private let trickle: Bool
    private let output: Output
    /// Signals as JSON lines on stdin/stdout (the same `RtcSignal` calls use).
    private let signaling = StandardIOSignaling()
    private var summary: Summary
    private var started = ContinuousClock.now
    private var finished: CheckedContinuation<Void, Never>?
    private var done = false
    private var endpoint: FileTransferEndpoint?
    private let media: CallMedia
    /// Seconds of media before hanging up, if set.
    private let duration: Double?
    private var senders: [MediaSender] = []
    private var receivers: [MediaReceiver] = []
    private let recordingClock = RecordingClock()
    /// The WebM recording, when `--record` names a .webm file.
    private var webm: WebmRecording?
    private var transferDone = false
    private var described = false
    private var heldCandidates: [RtcSignal] = []
    /// The peer's description came (candidates before it are held, and said so once).
    private var remoteDescribed = false
    private var heldNotice = false
    private var mediaDone = false
    private var durationDone = false
    /// Offers after the first (ICE restarts, from either side); the answering side is polite.
    private var negotiation: PerfectNegotiation
    /// ICE restarts while the connection is lost, within the recovery window.
    private var recovery: ConnectionRecovery

    init(
        role: String, configuration: PeerConfiguration, sendFile: String?, receiveDirectory: String?, echo: Bool,
        trickle: Bool, media: CallMedia = CallMedia(), duration: Double? = nil, recoveryWindow: Double = 30,
        output: Output
    ) throws {
        negotiation = PerfectNegotiation(polite: role == "answer")
        let policy = ConnectionRecovery.Policy(window: recoveryWindow)
        recovery = ConnectionRecovery(policy: role == "answer" ? policy.delayed(by: 1) : policy)
        self.media = media
        self.duration = duration
        peer = try PeerConnection(configuration: configuration)
        self.role = role
        self.sendFile = sendFile
        self.receiveDirectory = receiveDirectory
        self.echo = echo
        self.trickle = trickle
        self.output = output
        summary = Summary(role: role)
        summary.wantedTransfer = sendFile != nil || receiveDirectory != nil
    }

    func run(timeout: Duration) async -> Summary {
        let events = await peer.events()
        let eventTask = Task { for await event in events { await handle(event) } }
        let signalTask = Task {
            for await input in await signaling.inputs() { await handleSignal(input) }
            finish(nil)
        }
        let timeoutTask = Task {
            try? await Task.sleep(for: timeout)
            finish("timed out after \(timeout)")
        }
        let interruptTask = Task {
            await Termination.wait()
            finish("interrupted")
        }
        if role == "offer" {
            started = ContinuousClock.now
            // Audio and video sections when there is something to send or to record.
            if media.audio != nil || media.recordDirectory != nil {
                _ = await peer.addTransceiver(.audio, direction: media.audio != nil ? .sendrecv : .recvonly)
            }
            if media.video != nil || media.recordDirectory != nil {
                _ = await peer.addTransceiver(.video, direction: media.video != nil ? .sendrecv : .recvonly)
            }
            let channel = await peer.createDataChannel(DataChannelParameters(label: "data"))
            use(channel)
            do {
                let offer = try await peer.createOffer()
                try await peer.setLocalDescription(offer)
                await sendDescription(type: .offer, offer)
            } catch {
                finish("\(error)")
            }
        }
        let statsTask = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                await printLiveStats()
            }
        }
        let recoveryTask = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                await watchConnection()
            }
        }
        if !done { await withCheckedContinuation { finished = $0 } }
        statsTask.cancel()
        recoveryTask.cancel()
        if recovery.losses > 0 {
            summary.outages = recovery.losses
            summary.longestOutage = recovery.longestOutage
        }
        for sender in senders {
            await sender.stop()
            summary.sent.append(await sender.currentStats())
        }
        for receiver in receivers { summary.received.append(await receiver.stop()) }
        if let webm {
            webm.close()
            summary.webm = webm.path
            if let error = webm.error, summary.error == nil { summary.error = error }
        }
        if summary.transfer == nil { summary.transfer = receivedFiles.value }
        await peer.close()
        for task in [eventTask, signalTask, timeoutTask, interruptTask] { task.cancel() }
        return summary
    }

    // MARK: Media

    /// Once connected: a sender per section that sends and has a file of its
    /// kind, and the duration timer.
    private func startMedia() async {
        transferDone = !summary.wantedTransfer || (sendFile == nil)
        for info in await peer.transceiverInfos where info.direction == .sendrecv || info.direction == .sendonly {
            guard let path = media.file(for: info.kind),
                !senders.contains(where: { $0.kind == info.kind })
            else { continue }
            do {
                let source = try MediaSources.open(path, kind: info.kind, start: media.start)
                output.log("sending \(info.kind.rawValue) on mid \(info.mid): \(source.label)")
                let sender = MediaSender(
                    peer: peer, mid: info.mid, source: source, loop: media.loop, duration: duration)
                senders.append(sender)
                await sender.start()
                Task {
                    await sender.waitUntilFinished()
                    await self.senderFinished()
                }
            } catch {
                finish("\(error)")
                return
            }
        }
        mediaDone = senders.isEmpty
        if let duration {
            Task {
                try? await Task.sleep(for: .milliseconds(Int64(duration * 1000)))
                self.durationElapsed()
            }
        } else {
            durationDone = true
        }
        checkDone()
    }

    private func startReceiving(mid: String, kind: MediaKind) async {
        if webm == nil, media.recordsWebm {
            do { webm = try await media.webmRecording(on: peer, clock: recordingClock) } catch {
                finish("recording: \(error)")
                return
            }
        }
        guard
            let receiver = media.receiver(
                forTrack: mid, kind: kind, peer: peer, clock: recordingClock, alongside: receivers, webm: webm)
        else { return }
        receivers.append(receiver)
        await receiver.start()
    }

    private func senderFinished() async {
        var all = true
        for sender in senders where !(await sender.isFinished) { all = false }
        if all {
            mediaDone = true
            checkDone()
        }
    }

    private func durationElapsed() {
        durationDone = true
        mediaDone = true
        checkDone()
    }

    /// Says bye and ends once everything asked for is done. A run with only
    /// things to receive waits for the peer's bye (or the duration).
    private func checkDone() {
        let sendsSomething = sendFile != nil || !senders.isEmpty || duration != nil
        guard summary.connected, sendsSomething, transferDone, mediaDone, durationDone else { return }
        say(RtcSignal(type: .bye))
        finish(nil)
    }

    /// One line a second on stderr while media flows.
    private func printLiveStats() async {
        guard summary.connected, !senders.isEmpty || !receivers.isEmpty else { return }
        var parts: [String] = []
        for sender in senders {
            let stats = await sender.currentStats()
            parts.append("↑\(stats.kind) \(stats.framesSent) fr \(stats.bytesSent / 1000) kB")
        }
        for receiver in receivers {
            let stats = await receiver.currentStats()
            guard stats.packetsReceived > 0 else { continue }
            parts.append(
                "↓\(stats.kind) \(stats.framesDecoded) fr \(stats.bytesReceived / 1000) kB lost \(stats.packetsLost)"
                    + (stats.kind == "video" ? " nack \(stats.nacksSent) pli \(stats.plisSent)" : ""))
        }
        let peerStats = await peer.stats()
        if let rtt = peerStats.roundTripTime { parts.append("rtt \(rounded(rtt * 1000)) ms") }
        output.log("stats: " + parts.joined(separator: " | "))
    }

    private func finish(_ error: String?) {
        guard !done else { return }
        done = true
        if let error, summary.error == nil { summary.error = error }
        finished?.resume()
        finished = nil
    }

    private func sendDescription(type: RtcSignal.SignalType, _ sdp: String) async {
        if trickle {
            // The candidates gathered so far (host candidates are there at once) ride in the
            // description, saving the peer a wait for them; later ones are trickled.
            say(RtcSignal(type: type, sdp: await peer.currentLocalDescription() ?? sdp))
            described = true
            for candidate in heldCandidates { say(candidate) }
            heldCandidates = []
        } else {
            _ = await peer.waitForGatheringComplete()
            say(RtcSignal(type: type, sdp: await peer.currentLocalDescription() ?? sdp))
        }
    }

    private func say(_ signal: RtcSignal) { signaling.write(signal) }

    /// Candidates go out only after our description (a peer cannot use them before it).
    private func sayCandidate(_ signal: RtcSignal) {
        if described { say(signal) } else { heldCandidates.append(signal) }
    }

    private func handleSignal(_ input: SignalingInput) async {
        guard case .signal(let signal, _) = input else {
            if case .undecodable(let error, _) = input { output.log("ignoring a line that is not a signal: \(error)") }
            return
        }
        do {
            switch signal.type {
            case .offer:
                guard let sdp = signal.sdp, !sdp.isEmpty else { return output.log("ignoring an offer without sdp") }
                if remoteDescribed {
                    // A renegotiation (an ICE restart) on the connection under way.
                    return try await perform(negotiation.remoteOffer(sdp))
                }
                guard role == "answer" else {
                    return output.log(
                        "ignoring an offer from the peer: this side made the offer (rtc offer) and waits for an answer")
                }
                remoteDescribed = true
                started = ContinuousClock.now
                try await peer.setRemoteDescription(sdp, type: .offer)
                await media.receiveOnlyWhereNothingToSend(on: peer)
                let answer = try await peer.createAnswer()
                try await peer.setLocalDescription(answer)
                await sendDescription(type: .answer, answer)
            case .answer:
                guard let sdp = signal.sdp, !sdp.isEmpty else { return output.log("ignoring an answer without sdp") }
                if negotiation.awaitingAnswer { return try await perform(negotiation.remoteAnswer(sdp)) }
                guard role == "offer", !remoteDescribed else {
                    return output.log("ignoring an answer to no offer of ours (a stale or second one)")
                }
                remoteDescribed = true
                try await peer.setRemoteDescription(sdp, type: .answer)
            case .candidate:
                if !remoteDescribed, !heldNotice {
                    heldNotice = true
                    output.log("candidates before any description: held until it comes (at most 256)")
                }
                for item in signal.candidates ?? [] {
                    do { try await peer.addIceCandidate(item.sdp) } catch {
                        output.log("ignoring a candidate: \(error)")
                    }
                }
            case .bye:
                finish(nil)
            default:
                output.log("ignoring signal type \(signal.type.rawValue)")
            }
        } catch {
            finish("\(error)")
        }
    }

    private func handle(_ event: PeerEvent) async {
        switch event {
        case .localCandidate(let candidate, let mid, let index):
            if trickle {
                sayCandidate(
                    RtcSignal(type: .candidate, candidates: [.init(sdp: candidate, sdpMLineIndex: index, sdpMid: mid)]))
            }
        case .gatheringComplete:
            if trickle {
                sayCandidate(RtcSignal(type: .candidate, candidates: [.init(sdp: "", sdpMLineIndex: 0, sdpMid: nil)]))
            }
        case .iceStateChanged(let iceState):
            if iceState == .connected || iceState == .completed, summary.iceMs == nil {
                summary.iceMs = rounded((ContinuousClock.now - started).milliseconds)
            }
        case .connectionStateChanged(let state):
            output.log("connection \(state.rawValue)")
            if state == .connected, !summary.connected {
                summary.connected = true
                summary.setupMs = rounded((ContinuousClock.now - started).milliseconds)
                summary.selectedPair = await peer.stats().selectedPair
                await startMedia()
            } else if state == .connected, recovery.isRecovering {
                recovery.restored(now: clock())
                output.log("connection back after \(rounded(recovery.lastOutage ?? 0)) s")
            } else if state == .disconnected, summary.connected {
                await lost("ICE lost the connection")
            } else if state == .failed {
                finish(await peer.failureReason ?? "connection failed")
            }
        case .dataChannel(let channel):
            use(channel)
        case .track(let mid, let kind):
            await startReceiving(mid: mid, kind: kind)
        default:
            break
        }
    }

    // MARK: Recovery

    private let born = ContinuousClock.now

    private func clock() -> Double { (ContinuousClock.now - born).inSeconds }

    /// The connection is lost: restart ICE (now or on the recovery schedule).
    private func lost(_ why: String) async {
        if !recovery.isRecovering {
            output.log("\(why): restarting ICE (for up to \(rounded(recovery.policy.window)) s)")
        }
        await act(recovery.lost(now: clock()))
    }

    /// Every 250 ms: the recovery schedule, and silence while media should be arriving.
    private func watchConnection() async {
        guard summary.connected, !done else { return }
        if recovery.isRecovering {
            await act(recovery.tick(now: clock()))
        } else if !receivers.isEmpty, await peer.secondsSinceLastPacket() > Self.silenceLimit {
            await lost("no packet for \(Int(Self.silenceLimit)) s")
        }
    }

    /// Seconds without a packet, while receiving media, after which the connection counts as lost.
    static let silenceLimit = 3.0

    private func act(_ actions: [ConnectionRecovery.Action]) async {
        for action in actions {
            switch action {
            case .restartIce:
                do { try await perform(negotiation.retry(iceRestart: true)) } catch { finish("\(error)") }
            case .giveUp(let seconds):
                finish(
                    "the connection was lost for \(Int(seconds.rounded())) s and \(recovery.restartsMade) ICE restarts did not bring it back (recovery window \(Int(recovery.policy.window)) s)"
                )
            }
        }
    }

    /// Carries out negotiation steps on the connection under way.
    private func perform(_ steps: [PerfectNegotiation.Step]) async throws {
        for step in steps {
            switch step {
            case .offer(let iceRestart):
                let offer = try await peer.createOffer(iceRestart: iceRestart)
                try await peer.setLocalDescription(offer)
                say(RtcSignal(type: .offer, sdp: await peer.currentLocalDescription() ?? offer))
            case .rollback:
                try await peer.rollback()
            case .answer(let sdp):
                try await peer.setRemoteDescription(sdp, type: .offer)
                let answer = try await peer.createAnswer()
                try await peer.setLocalDescription(answer)
                say(RtcSignal(type: .answer, sdp: await peer.currentLocalDescription() ?? answer))
            case .applyAnswer(let sdp):
                try await peer.setRemoteDescription(sdp, type: .answer)
            }
        }
    }

    private func use(_ channel: DataChannel) {
        let output = self.output
        let endpoint = FileTransferEndpoint(
            channel: channel, receiveDirectory: receiveDirectory, echo: echo,
            onProgress: { progress in
                let percent = progress.total == 0 ? 100 : Int(progress.bytes * 100 / progress.total)
                output.log(
                    "\(progress.sending ? "sending" : "receiving") \(progress.name): \(progress.bytes)/\(progress.total) bytes (\(percent)%)"
                )
            },
            onReceived: { [receivedFiles] outcome in
                // Kept at once (not through a task), so a bye that follows the ack cannot overtake it.
                receivedFiles.set(outcome)
                output.log(
                    "received \(outcome.name): \(outcome.bytes) bytes, \(outcome.verdict)")
            })
        self.endpoint = endpoint
        Task {
            await endpoint.start()
            guard let path = sendFile else { return }
            guard await endpoint.waitUntilOpen() else {
                self.finish("the data channel closed before it opened")
                return
            }
            await self.sendFile(path, with: endpoint)
        }
    }

    private func sendFile(_ path: String, with endpoint: FileTransferEndpoint) async {
        do {
            let outcome = try await endpoint.send(path: path)
            summary.transfer = outcome
            guard outcome.ok else {
                say(RtcSignal(type: .bye))
                finish("the receiver's SHA-256 does not match")
                return
            }
            transferDone = true
            checkDone()
        } catch {
            finish("\(error)")
        }
    }

    private let receivedFiles = FileOutcomeBox()
}

extension MediaSender.Stats {
    var json: [String: any Sendable] {
        [
            "kind": kind, "mid": mid, "packets": packetsSent, "bytes": bytesSent, "frames": framesSent,
            "framesEncoded": framesEncoded, "keyframes": keyframesSent, "keyframeRequests": keyframeRequests,
            "seconds": rounded(seconds), "lostByPeer": Int(packetsLostByPeer),
        ].merging(roundTripTime.map { ["rttMs": rounded($0 * 1000)] } ?? [:]) { $1 }
    }
}

extension MediaReceiver.Stats {
    var json: [String: any Sendable] {
        var object: [String: any Sendable] = [
            "kind": kind, "mid": mid, "packets": packetsReceived, "bytes": bytesReceived, "lost": packetsLost,
            "frames": framesReceived, "framesDecoded": framesDecoded, "framesDropped": framesDropped,
            "nacks": nacksSent, "plis": plisSent, "seconds": rounded(seconds), "recordings": recordings,
        ]
        object["jitterMs"] = rounded(jitter * 1000)
        if let roundTripTime { object["rttMs"] = rounded(roundTripTime * 1000) }
        if kind == "audio" { object["concealedFrames"] = concealedFrames }
        if kind == "video" {
            object["freezes"] = freezes
            object["keyframes"] = keyframesReceived
            object["width"] = width
            object["height"] = height
        }
        return object
    }
}
