import Foundation
import RtcFileTransfer
import RtcPeer
import RtcSCTP

/// One `carrier rtc` run: a peer connection, its signaling on stdin/stdout,
/// and what it does on the data channel.
actor RtcSession {
    struct Summary {
        var role: String
        var connected = false
        var setupMs: Double?
        var transfer: FileTransferEndpoint.Outcome?
        var selectedPair: (local: String, remote: String)?
        var error: String?
        var wantedTransfer = false

        var succeeded: Bool { connected && error == nil && (!wantedTransfer || transfer?.ok == true) }

        var json: [String: any Sendable] {
            var object: [String: any Sendable] = ["role": role, "connected": connected, "ok": succeeded]
            if let setupMs { object["setupMs"] = setupMs }
            if let transfer {
                object["bytes"] = Int(transfer.bytes)
                object["sha256"] = transfer.sha256
                object["MBps"] = rounded(Double(transfer.bytes) / 1e6 / max(transfer.seconds, 1e-9))
                object["transferOk"] = transfer.ok
                if let path = transfer.path { object["path"] = path }
            }
            if let selectedPair {
                object["selectedPair"] = ["local": selectedPair.local, "remote": selectedPair.remote]
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
                    "\(transfer.name): \(transfer.bytes) bytes, \(rate) MB/s, sha256 \(transfer.sha256) \(transfer.ok ? "ok" : "MISMATCH")"
                )
            }
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
    private let writer = SignalWriter()
    private var summary: Summary
    private var started = ContinuousClock.now
    private var finished: CheckedContinuation<Void, Never>?
    private var done = false
    private var endpoint: FileTransferEndpoint?

    init(
        role: String, configuration: PeerConfiguration, sendFile: String?, receiveDirectory: String?, echo: Bool,
        trickle: Bool, output: Output
    ) throws {
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
            for await line in StandardInputLines.stream() { await handleSignal(line) }
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
            let channel = await peer.createDataChannel(DataChannelParameters(label: "data"))
            use(channel)
            do {
                let offer = try await peer.createOffer()
                try await peer.setLocalDescription(offer)
                await sendDescription(type: "offer", offer)
            } catch {
                finish("\(error)")
            }
        }
        if !done { await withCheckedContinuation { finished = $0 } }
        await peer.close()
        for task in [eventTask, signalTask, timeoutTask, interruptTask] { task.cancel() }
        return summary
    }

    private func finish(_ error: String?) {
        guard !done else { return }
        done = true
        if let error, summary.error == nil { summary.error = error }
        finished?.resume()
        finished = nil
    }

    private func sendDescription(type: String, _ sdp: String) async {
        if trickle {
            writer.write(SignalLine(type: type, sdp: sdp))
        } else {
            _ = await peer.waitForGatheringComplete()
            writer.write(SignalLine(type: type, sdp: await peer.currentLocalDescription() ?? sdp))
        }
    }

    private func handleSignal(_ line: String) async {
        guard let signal = StandardInputLines.decode(line) else {
            output.log("ignoring a line that is not a signal: \(line.prefix(80))")
            return
        }
        do {
            switch signal.type {
            case "offer":
                guard role == "answer", let sdp = signal.sdp else { return }
                started = ContinuousClock.now
                try await peer.setRemoteDescription(sdp)
                let answer = try await peer.createAnswer()
                try await peer.setLocalDescription(answer)
                await sendDescription(type: "answer", answer)
            case "answer":
                guard role == "offer", let sdp = signal.sdp else { return }
                try await peer.setRemoteDescription(sdp)
            case "candidate":
                for item in signal.candidates ?? [] { try? await peer.addIceCandidate(item.sdp) }
            case "bye":
                finish(nil)
            default:
                output.log("ignoring signal type \(signal.type)")
            }
        } catch {
            finish("\(error)")
        }
    }

    private func handle(_ event: PeerEvent) async {
        switch event {
        case .localCandidate(let candidate, let mid, let index):
            if trickle {
                writer.write(
                    SignalLine(
                        type: "candidate", candidates: [.init(sdp: candidate, sdpMLineIndex: index, sdpMid: mid)]))
            }
        case .gatheringComplete:
            if trickle {
                writer.write(SignalLine(type: "candidate", candidates: [.init(sdp: "", sdpMLineIndex: 0, sdpMid: nil)]))
            }
        case .connectionStateChanged(let state):
            output.log("connection \(state.rawValue)")
            if state == .connected {
                summary.connected = true
                summary.setupMs = rounded((ContinuousClock.now - started).milliseconds)
                summary.selectedPair = await peer.stats().selectedPair
            } else if state == .failed {
                finish(await peer.failureReason ?? "connection failed")
            }
        case .dataChannel(let channel):
            use(channel)
        default:
            break
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
            onReceived: { outcome in Task { await self.received(outcome) } })
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
            writer.write(SignalLine(type: "bye"))
            finish(outcome.ok ? nil : "the receiver's SHA-256 does not match")
        } catch {
            finish("\(error)")
        }
    }

    private func received(_ outcome: FileTransferEndpoint.Outcome) {
        summary.transfer = outcome
        output.log("received \(outcome.name): \(outcome.bytes) bytes, \(outcome.ok ? "sha256 ok" : "sha256 MISMATCH")")
    }
}
