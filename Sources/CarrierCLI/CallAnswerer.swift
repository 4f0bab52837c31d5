import Foundation
import RtcCalls
import RtcFileTransfer

/// `carrier listen --answer`: accepts every friend's call with the same media
/// choice, each recorded into its own folder, and reports what happens.
final class CallAnswerer: Sendable {
    let client: CallClient
    let media: CallMedia
    let output: Output
    private let task = TaskBox()

    init(client: CallClient, media: CallMedia, output: Output) {
        self.client = client
        self.media = media
        self.output = output
    }

    func start() async {
        let events = await client.events()
        let client = client
        let media = media
        let output = output
        task.set(
            Task {
                for await event in events {
                    switch event {
                    case .incoming(let call):
                        var perCall = media
                        if let directory = media.recordDirectory {
                            // One WebM per call beside the name given, or a directory per call.
                            guard
                                let place = PerCallPath.recording(
                                    directory, webm: media.recordsWebm, callId: call.id)
                            else {
                                output.log("refused a call whose id cannot name a recording")
                                try? await client.reject(call.id)
                                continue
                            }
                            perCall.recordDirectory = place
                        }
                        output.event(
                            "call \(call.id) from \(call.peer) (\(call.options.map(\.rawValue).joined(separator: ","))): answering",
                            [
                                "event": "callIncoming", "callId": call.id, "from": call.peer,
                                "options": call.options.map(\.rawValue),
                            ])
                        try? await client.accept(call.id, media: perCall)
                    case .stateChanged(let call):
                        var event: [String: any Sendable] = [
                            "event": "callState", "callId": call.id, "state": call.state.rawValue,
                        ]
                        var line = "call \(call.id) \(call.state.rawValue)"
                        if call.state == .connected, let path = try? await client.peerStats(call.id).path {
                            event["icePath"] = path.json
                            line += " (\(path))"
                        }
                        output.event(line, event)
                    case .fileReceived(let callId, let outcome):
                        output.event(
                            "call \(callId): received \(outcome.name), \(outcome.bytes) bytes, "
                                + (outcome.ok ? "sha256 ok → \(outcome.path ?? "")" : "FAILED (\(outcome.verdict))"),
                            [
                                "event": "callFile", "callId": callId, "name": outcome.name,
                                "bytes": Int(outcome.bytes),
                                "ok": outcome.ok, "path": outcome.path ?? "", "verdict": outcome.verdict,
                            ])
                    case .ended(let call):
                        let stats = try? await client.mediaStats(call.id)
                        let received = stats?.received ?? []
                        output.event(
                            "call \(call.id) ended (\(call.endReason?.rawValue ?? "?")) after \(rounded(call.duration)) s"
                                + received.filter { $0.packetsReceived > 0 }.map {
                                    "; \($0.kind) \($0.framesDecoded) frames, \(rounded($0.seconds)) s"
                                }.joined(),
                            [
                                "event": "callEnded", "callId": call.id, "endReason": call.endReason?.rawValue ?? "",
                                "seconds": rounded(call.duration), "received": received.map(\.json),
                                "recordings": received.flatMap(\.recordings),
                                "steps": CallSteps.json(call, received: received),
                            ].merging(stats?.path.map { ["icePath": $0.json] } ?? [:]) { $1 })
                    case .badSignal(let from, let error):
                        output.log("dropped a bad signal from \(from): \(error)")
                    case .fileProgress, .dataChannel:
                        continue
                    case .message(let callId, let message):
                        output.event(
                            CallAnswerer.describe(message, callId: callId), CallAnswerer.json(message, callId: callId))
                    }
                }
            })
    }

    func stop() async {
        await client.stop()
        task.cancel()
    }

    /// A received call message as a line: text as it is (quoted), bytes by count.
    static func describe(_ message: FileTransferEndpoint.Message, callId: String) -> String {
        switch message {
        case .text(let text): "call \(callId): message \"\(text.prefix(1000))\""
        case .binary(let bytes): "call \(callId): message of \(bytes.count) bytes"
        }
    }

    static func json(_ message: FileTransferEndpoint.Message, callId: String) -> [String: any Sendable] {
        switch message {
        case .text(let text): ["event": "callMessage", "callId": callId, "text": text]
        case .binary(let bytes): ["event": "callMessage", "callId": callId, "bytes": bytes.count]
        }
    }
}

/// Holds a task so a Sendable owner can cancel it.
final class TaskBox: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<Void, Never>?
    func set(_ task: Task<Void, Never>) { lock.withLock { self.task = task } }
    func cancel() { lock.withLock { task }?.cancel() }
}
