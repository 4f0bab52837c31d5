import AsyncExtras
import Foundation
import RtcCalls
import RtcFileTransfer
import RtcMedia
import RtcPeer

/// One outgoing call driven from the command line: placed, followed, its file
/// sent, hung up at the end, and summed up.
struct CallRun {
    let client: CallClient
    let output: Output

    struct Summary {
        var callId = ""
        var connected = false
        var setupMs: Double?
        var sent: [MediaSender.Stats] = []
        var received: [MediaReceiver.Stats] = []
        var file: FileTransferEndpoint.Outcome?
        var fileError: String?
        var wantedFile = false
        var endReason: Call.EndReason?
        var endDetail: String?
        /// The one-file recording, when `--record` names a .webm file.
        var webm: String?
        var outages = 0
        var longestOutage = 0.0
        var error: String?
        /// The setup's steps (`CallSteps`).
        var steps: [String: any Sendable] = [:]
        /// The ICE pair in use at the end.
        var path: IcePath?

        /// Connected, every requested transfer done, and not cut off by a failure.
        var succeeded: Bool {
            connected && error == nil && (!wantedFile || file?.ok == true) && endReason != .failed
                && endReason != .error
        }

        var json: [String: any Sendable] {
            var object: [String: any Sendable] = [
                "callId": callId, "connected": connected, "ok": succeeded,
                "media": ["sent": sent.map(\.json), "received": received.map(\.json)] as [String: any Sendable],
                "recordings": received.flatMap(\.recordings) + (webm.map { [$0] } ?? []),
            ]
            if let setupMs { object["setupMs"] = rounded(setupMs) }
            if !steps.isEmpty { object["steps"] = steps }
            if let path { object["icePath"] = path.json }
            if let endReason { object["endReason"] = endReason.rawValue }
            if let endDetail { object["endDetail"] = endDetail }
            object["outages"] = outages
            object["longestOutage"] = rounded(longestOutage)
            if let file {
                object["bytes"] = Int(file.bytes)
                object["MBps"] = rounded(Double(file.bytes) / 1e6 / max(file.seconds, 1e-9))
                object["sha256Match"] = file.ok
            } else if wantedFile {
                object["sha256Match"] = false
            }
            if let error = error ?? fileError { object["error"] = error }
            return object
        }

        var text: String {
            var lines = [
                "call \(callId): "
                    + (connected ? "connected" + (setupMs.map { " in \(rounded($0)) ms" } ?? "") : "not connected")
                    + (endReason.map { ", ended: \($0.rawValue)" } ?? "")
            ]
            if outages > 0 {
                lines.append("connection lost \(outages) time(s), back after at most \(rounded(longestOutage)) s")
            }
            if let endDetail { lines.append(endDetail) }
            if connected { lines.append(CallSteps.text(steps)) }
            if let path { lines.append("path: \(path)") }
            lines += mediaLines(sent: sent, received: received)
            if let file {
                let rate = rounded(Double(file.bytes) / 1e6 / max(file.seconds, 1e-9))
                lines.append(
                    "file \(file.name): \(file.bytes) bytes, \(rate) MB/s, sha256 \(file.ok ? "matches" : "MISMATCH")")
            }
            if let error = error ?? fileError { lines.append("error: \(error)") }
            return lines.joined(separator: "\n")
        }
    }

    func place(to peer: String, media: CallMedia, sendFile: String?, duration: Double?, say: String? = nil) async
        -> Summary
    {
        var summary = Summary()
        if media.recordsWebm { summary.webm = media.recordDirectory }
        summary.wantedFile = sendFile != nil
        let events = await client.events()
        var options: [RtcSignal.MediaOption] = [.audio]
        if media.video != nil || media.recordDirectory != nil { options.append(.video) }
        if sendFile != nil || media.receiveDirectory != nil || say != nil { options.append(.data) }
        let call: Call
        do { call = try await client.makeCall(to: peer, options: options, media: media) } catch {
            summary.error = "\(error)"
            return summary
        }
        summary.callId = call.id
        output.log("calling \(peer) (call \(call.id))…")
        let interrupt = Task {
            await Termination.wait()
            try? await client.endCall(call.id)
        }
        defer { interrupt.cancel() }
        var fileTask: Task<Void, Never>?
        var statsTask: Task<Void, Never>?
        let outcome = FileOutcomeBox()
        for await event in events {
            switch event {
            case .stateChanged(let changed) where changed.id == call.id:
                output.log("call \(changed.state.rawValue)")
                guard changed.state == .connected, !summary.connected else { continue }
                summary.connected = true
                if let path = try? await client.peerStats(call.id).path { output.log("path: \(path)") }
                statsTask = Task { await liveStats(call.id) }
                let client = client
                let connectedAt = ContinuousClock.now
                fileTask = Task {
                    if let say {
                        do { try await client.sendText(say, callId: call.id) } catch {
                            output.log("the message could not be sent: \(error)")
                        }
                    }
                    if let sendFile {
                        do { outcome.set(try await client.sendFile(sendFile, callId: call.id)) } catch {
                            outcome.fail("\(error)")
                        }
                    }
                    // --duration counts from the connection, the file being sent meanwhile;
                    // the call ends when both are done.
                    if let duration {
                        try? await Task.sleep(
                            until: connectedAt + .milliseconds(Int64(duration * 1000)), clock: .continuous)
                    }
                    // No duration: a call that only sends a file ends with it; media-only calls run until hung up.
                    if duration != nil || sendFile != nil { try? await client.endCall(call.id) }
                }
            case .message(let id, let message) where id == call.id:
                output.result(CallAnswerer.describe(message, callId: id), CallAnswerer.json(message, callId: id))
            case .fileProgress(let id, let progress) where id == call.id && progress.sending:
                let percent = progress.total == 0 ? 100 : Int(progress.bytes * 100 / progress.total)
                output.log("sending \(progress.name): \(progress.bytes)/\(progress.total) bytes (\(percent)%)")
            case .ended(let ended) where ended.id == call.id:
                summary.endReason = ended.endReason
                summary.endDetail = ended.endDetail
                summary.outages = ended.outages
                summary.longestOutage = ended.longestOutage
                fileTask?.cancel()
                statsTask?.cancel()
                if let stats = try? await client.mediaStats(call.id) {
                    summary.sent = stats.sent
                    summary.received = stats.received
                    summary.setupMs = stats.setupMs
                    summary.path = stats.path
                }
                summary.steps = CallSteps.json(ended, received: summary.received)
                summary.file = outcome.value
                summary.fileError = outcome.error
                if !summary.connected {
                    summary.error = "the call ended before it connected: \(ended.endReason?.rawValue ?? "?")"
                }
                return summary
            default:
                continue
            }
        }
        return summary
    }

    /// One line a second while the call runs.
    func liveStats(_ callId: String) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            guard let stats = try? await client.mediaStats(callId) else { return }
            let line = liveStatsLine(stats, peer: try? await client.peerStats(callId))
            if let line { output.log(line) }
        }
    }
}

/// The file outcome, set by the sending task and read when the call ends.
final class FileOutcomeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var outcome: FileTransferEndpoint.Outcome?
    private var failure: String?
    func set(_ value: FileTransferEndpoint.Outcome) { lock.withLock { outcome = value } }
    func fail(_ why: String) { lock.withLock { failure = why } }
    var value: FileTransferEndpoint.Outcome? { lock.withLock { outcome } }
    var error: String? { lock.withLock { failure } }
}
