import CarrierLog
import Foundation
import RtcFileTransfer
import RtcPeer

/// The call's data channel: the file endpoint on the call's own channel
/// (files both ways; the application's messages routed to the application,
/// or echoed), and channels the application opens for itself (sessions).
extension CallSession {

    /// Data channels whose protocol starts with this belong to the application
    /// (sessions), except the call's own file channel (`carrier-file/1`).
    static let applicationChannelPrefix = "carrier-"

    func attach(_ channel: DataChannel, openedHere: Bool = false) {
        let name = channel.parameters.protocol
        if name.hasPrefix(Self.applicationChannelPrefix), name != FileTransferEndpoint.protocolName {
            report(.dataChannel(callId: id, channel))
            return
        }
        guard endpoint == nil else { return }
        let callId = id
        let report = report
        let endpoint = FileTransferEndpoint(
            channel: channel, receiveDirectory: media.receiveDirectory, peerOpened: !openedHere,
            onProgress: { report(.fileProgress(callId: callId, $0)) },
            onReceived: { report(.fileReceived(callId: callId, $0)) })
        self.endpoint = endpoint
        // The endpoint takes the file protocols' messages; the application's are the call's to route.
        let echo = media.echo
        Task {
            await endpoint.start { [weak endpoint] message in
                guard echo else { return report(.message(callId: callId, message)) }
                await Self.echo(message, on: endpoint)
            }
        }
        let waiters = channelWaiters
        channelWaiters = []
        for waiter in waiters { waiter.resume(returning: endpoint) }
    }

    /// `--echo`: an application message goes straight back. Best effort: a
    /// message that cannot go (the channel closed, a file going out) is dropped
    /// with a line in the log, as the echo's sender cannot be told.
    static func echo(_ message: FileTransferEndpoint.Message, on endpoint: FileTransferEndpoint?) async {
        guard let endpoint else { return }
        do {
            switch message {
            case .text(let text): try await endpoint.sendText(text)
            case .binary(let bytes): try await endpoint.sendData(bytes)
            }
        } catch {
            Logger("call").info("a message was not echoed: \(error)")
        }
    }

    /// Sends a file on the call's data channel once it is open, in the protocol
    /// the configuration chooses: by default the binary one when the peer says
    /// it speaks it, the reference peers' JSON chunks otherwise.
    func sendFile(_ path: String) async throws -> FileTransferEndpoint.Outcome {
        let endpoint = try await openEndpoint()
        switch options.fileProtocol {
        case .automatic:
            // The peer's word that it speaks the binary protocol comes right after the
            // channel opens; while the connection is down it cannot, so wait longer then.
            var binary = await endpoint.waitForPeerProtocol()
            while !binary, call.state == .disconnected {
                binary = await endpoint.waitForPeerProtocol()
            }
            return binary ? try await endpoint.send(path: path) : try await endpoint.sendChunked(path: path)
        case .binary: return try await endpoint.send(path: path)
        case .chunked: return try await endpoint.sendChunked(path: path)
        }
    }

    func cancelFiles() async { await endpoint?.cancel() }

    /// Sends a text or binary message on the call's data channel once it is open.
    func sendMessage(_ message: FileTransferEndpoint.Message) async throws {
        let endpoint = try await openEndpoint()
        switch message {
        case .text(let text): try await endpoint.sendText(text)
        case .binary(let bytes): try await endpoint.sendData(bytes)
        }
    }

    /// The call's data channel endpoint, once open (waits for it).
    func openEndpoint() async throws -> FileTransferEndpoint {
        var endpoint = self.endpoint
        if endpoint == nil, call.state != .ended, !closing {
            endpoint = await withCheckedContinuation { channelWaiters.append($0) }
        }
        guard let endpoint, await endpoint.waitUntilOpen() else { throw CallError.noDataChannel }
        return endpoint
    }

    func openDataChannel(_ parameters: DataChannelParameters) async throws -> DataChannel {
        guard call.state != .ended, !closing else { throw CallError.noSuchCall(id) }
        guard call.options.contains(.data) else { throw CallError.noDataChannel }
        return await try self.peer().createDataChannel(parameters)
    }
}
