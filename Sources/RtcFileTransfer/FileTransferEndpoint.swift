import AsyncExtras
import FileSafety
import Foundation
import RtcPeer

/// Sends and receives files on one reliable, ordered data channel with the
/// binary file protocol (docs/file-protocol.md): a JSON header, the bytes as
/// binary messages paced by the buffered-amount low-water event, and a JSON
/// acknowledgement with the receiver's SHA-256. The receiver writes to a
/// temporary file and renames it only when the hash matches. It also sends
/// and receives the reference peers' JSON chunks (`ChunkMessage`), and either
/// side can cancel (`file-cancel`). Every file ends in exactly one outcome.
public actor FileTransferEndpoint {
    /// An application message on the channel: text or bytes that are not part
    /// of a file transfer (the reference SDK's sendText / onReceiveMessage).
    public enum Message: Sendable, Equatable {
        case text(String)
        case binary([UInt8])
    }

    /// Messages are this large; the send buffer is kept between the two marks.
    public static let chunkSize = 64 * 1024
    /// The DCEP protocol of a data channel whose opener speaks the binary file
    /// protocol. The side that receives such a channel answers with a
    /// `file-protocol` message, so the opener learns the same of it.
    public static let protocolName = "carrier-file/1"
    /// How long a sender waits, after the channel opens, to hear that the peer
    /// speaks the binary protocol before it falls back to JSON chunks.
    public static let helloWait = Duration.seconds(1)
    static let highWater = 4 << 20
    static let lowWater = 1 << 20
    /// Largest file a receiver accepts unless told otherwise.
    public static let defaultMaxReceiveSize: UInt64 = 16 << 30

    private let channel: any MessageChannel
    private let receiveDirectory: String?
    private let maxReceiveSize: UInt64
    private let onProgress: @Sendable (Progress) -> Void
    private let onReceived: @Sendable (Outcome) -> Void
    /// The file going out, if one is (`BinarySender` or `ChunkedSender`).
    private var binarySender: BinarySender?
    private var chunkedSender: ChunkedSender?
    /// The sender waits here for the buffer to drain or the ack; anything that
    /// changes its state (drained, ack, cancel, close, timeout) wakes it.
    private var sendWaiter: CheckedContinuation<Void, Never>?
    /// The binary protocol's file coming in, if one is.
    private var incoming: BinaryReceiver
    private var sending: Bool { binarySender != nil || chunkedSender != nil }
    private var closed = false
    private var openWaiters: [CheckedContinuation<Bool, Never>] = []
    private var reader: Task<Void, Never>?
    /// Files arriving as the reference peers' JSON chunks (only with a receive directory).
    private var chunked: ChunkedReceiver?
    /// Control messages (hello, cancel, refusal, final ack) that could not
    /// go out because the channel had closed (`sendControl`).
    public private(set) var controlMessagesUnsent = 0
    /// The peer said it speaks the binary file protocol (DCEP protocol, or its `file-protocol` message).
    public private(set) var peerSpeaksBinary = false
    private let peerOpened: Bool
    private var helloWaiters: [CheckedContinuation<Void, Never>] = []
    /// Chunked files received at once, at most.
    static let maxChunkedFiles = 4

    /// An endpoint on an open data channel: files it receives go into
    /// `receiveDirectory` (none: refused), up to `maxReceiveSize`; the
    /// callbacks report progress and received files. `peerOpened`: the peer
    /// opened the channel (this side then says it speaks the binary protocol).
    public init(
        channel: any MessageChannel, receiveDirectory: String? = nil, maxReceiveSize: UInt64 = defaultMaxReceiveSize,
        peerOpened: Bool = false, onProgress: @escaping @Sendable (Progress) -> Void = { _ in },
        onReceived: @escaping @Sendable (Outcome) -> Void = { _ in }
    ) {
        self.peerOpened = peerOpened
        self.channel = channel
        self.receiveDirectory = receiveDirectory
        self.maxReceiveSize = maxReceiveSize
        self.onProgress = onProgress
        self.onReceived = onReceived
        incoming = BinaryReceiver(directory: receiveDirectory, maxSize: maxReceiveSize)
        chunked = receiveDirectory.map {
            ChunkedReceiver(directory: $0, maxSize: maxReceiveSize, maxFiles: Self.maxChunkedFiles)
        }
        channel.bufferedAmountLowThreshold = Self.lowWater
    }

    /// Starts reading the channel's events; call once. What is not the file
    /// protocols' goes to `onMessage`: the owner (a call) decides what the
    /// application's messages are for. On a channel the peer opened with
    /// `protocolName`, says that this side speaks it too.
    public func start(onMessage: @escaping @Sendable (Message) async -> Void = { _ in }) {
        guard reader == nil else { return }
        if peerOpened, channel.protocolName == Self.protocolName {
            peerSpeaksBinary = true
            sendControl(Self.hello)
        }
        let events = channel.events
        reader = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                if let message = await self.take(event) { await onMessage(message) }
            }
            await self?.channelEnded()
        }
    }

    /// Waits until the channel is open (true) or closed (false).
    public func waitUntilOpen() async -> Bool {
        switch channel.readyState {
        case .open: return true
        case .closing, .closed: return false
        case .connecting: return await withCheckedContinuation { openWaiters.append($0) }
        }
    }

    private func releaseOpenWaiters(_ open: Bool) {
        let waiters = openWaiters
        openWaiters = []
        for waiter in waiters { waiter.resume(returning: open) }
    }

    /// Sends a text message to the application on the other side (any time,
    /// also while a file goes: messages are ordered on the channel).
    public func sendText(_ text: String) throws(TransferError) {
        guard text.utf8.count <= DataChannel.maxMessageSize else {
            throw .protocolViolation("a message is at most \(DataChannel.maxMessageSize) bytes")
        }
        do { try channel.send(text) } catch { throw .channelClosed }
    }

    /// Sends bytes to the application on the other side. Not while this side
    /// sends a file in the binary protocol: the receiver would take them for the file's.
    public func sendData(_ bytes: [UInt8]) throws(TransferError) {
        guard !sending else { throw .busy }
        guard bytes.count <= DataChannel.maxMessageSize else {
            throw .protocolViolation("a message is at most \(DataChannel.maxMessageSize) bytes")
        }
        do { try channel.send(bytes) } catch { throw .channelClosed }
    }

    static let hello = #"{"protocol":"carrier-file/1","type":"file-protocol"}"#

    /// Waits until the channel is open and the peer has said it speaks the
    /// binary protocol, for at most `timeout` after the channel opened; says whether it did.
    public func waitForPeerProtocol(timeout: Duration = helloWait) async -> Bool {
        guard !peerSpeaksBinary else { return true }
        guard await waitUntilOpen() else { return false }
        let waited = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.releaseHelloWaiters()
        }
        await withCheckedContinuation { continuation in
            if peerSpeaksBinary || closed { continuation.resume() } else { helloWaiters.append(continuation) }
        }
        waited.cancel()
        return peerSpeaksBinary
    }

    private func releaseHelloWaiters() {
        let waiters = helloWaiters
        helloWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Sends a file and waits for the receiver's acknowledgement.
    public func send(path: String) async throws(TransferError) -> Outcome {
        guard !sending else { throw .busy }
        let (name, size, file) = try Self.open(path)
        // Hash first: the header carries the SHA-256 the receiver checks against.
        guard let hashFile = BlockFile.openForReading(path) else { throw .unreadable(path) }
        let digest = Sha256()
        do { try hashFile.forEachBlock(size: 1 << 20) { digest.update($0) } } catch {
            throw .unreadable("\(path): \(error.description)")
        }
        hashFile.close()
        binarySender = BinarySender(name: name, size: size, sha256: Sha256.hex(digest.finish()))
        defer { binarySender = nil }
        let started = ContinuousClock.now
        var lastProgress = started
        while let step = binarySender?.next(buffered: channel.bufferedAmount) {
            if case .waitForAck = step {
                await waitForAck(name: name, total: size, within: binarySender?.ackWait ?? .seconds(60))
                continue
            }
            if case .bytes(let count) = step {
                let block = try Self.read(file, upTo: count, path: path)
                guard !block.isEmpty else { throw .unreadable("\(path) ended early") }
                do { try channel.send(block) } catch {
                    binarySender?.channelClosed()
                    continue
                }
                binarySender?.sent(block.count)
                if ContinuousClock.now - lastProgress > .milliseconds(250) {
                    lastProgress = ContinuousClock.now
                    reportSent(name: name, handed: binarySender?.sent ?? 0, total: size)
                }
            } else if let result = try await carryOut(step) {
                if result.ok { onProgress(Progress(name: name, bytes: result.bytes, total: size, sending: true)) }
                return Outcome(
                    name: name, bytes: result.bytes, sha256: result.sha256, ok: result.ok,
                    seconds: seconds(since: started), path: nil)
            }
        }
        throw .cancelled  // not reached: the sender is set until this returns
    }

    /// Sends a file as the reference peers' JSON chunks (base64), paced like the
    /// binary protocol. That format has no acknowledgement: the outcome is ok
    /// once every chunk is handed to the channel.
    public func sendChunked(path: String, mime: String = "application/octet-stream") async throws(TransferError)
        -> Outcome
    {
        guard !sending else { throw .busy }
        let (name, size, file) = try Self.open(path)
        chunkedSender = ChunkedSender(name: name, size: size, mime: mime)
        defer { chunkedSender = nil }
        let started = ContinuousClock.now
        var lastProgress = started
        while let step = chunkedSender?.next(buffered: channel.bufferedAmount) {
            if case .bytes(let count) = step {
                let block = try Self.read(file, upTo: count, path: path)
                guard let text = chunkedSender?.chunk(block) else { continue }
                do { try channel.send(text) } catch {
                    chunkedSender?.channelClosed()
                    continue
                }
                let complete = chunkedSender?.isComplete ?? true
                if ContinuousClock.now - lastProgress > .milliseconds(250) || complete {
                    lastProgress = ContinuousClock.now
                    onProgress(Progress(name: name, bytes: chunkedSender?.sent ?? 0, total: size, sending: true))
                }
            } else if let result = try await carryOut(step) {
                return Outcome(
                    name: name, bytes: result.bytes, sha256: result.sha256, ok: result.ok,
                    seconds: seconds(since: started), path: nil)
            }
        }
        throw .cancelled  // not reached: the sender is set until this returns
    }

    /// The file's name, size and an open handle, or why it cannot be sent.
    private static func open(_ path: String) throws(TransferError) -> (String, UInt64, BlockFile) {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value,
            let file = BlockFile.openForReading(path)
        else { throw .unreadable(path) }
        return (URL(fileURLWithPath: path).lastPathComponent, size, file)
    }

    /// Does a sender's step other than a block of the file (which the sender's
    /// own loop reads and hands over); returns the result once the transfer is over.
    private func carryOut(_ step: SendStep) async throws(TransferError) -> SendResult? {
        switch step {
        case .send(let text):
            do { try channel.send(text) } catch { senderChannelClosed() }
        case .tellPeer(let text):
            sendControl(text)
        case .bytes:
            break  // the sender's loop handles it
        case .waitForDrain:
            await waitForDrain()
        case .waitForAck:
            break  // the binary sender's loop waits with its progress reports
        case .finished(let result):
            return try result.get()
        }
        return nil
    }

    private func senderChannelClosed() {
        binarySender?.channelClosed()
        chunkedSender?.channelClosed()
    }

    private static func read(_ file: BlockFile, upTo count: Int, path: String) throws(TransferError) -> [UInt8] {
        do { return try file.read(upTo: count) } catch { throw .unreadable("\(path): \(error.description)") }
    }

    /// Stops what is being sent or received on this channel; the peer is told (`file-cancel`).
    public func cancel() {
        stopSending()
        if let name = incoming.receivingName {
            sendControl(CancelMessage.json(name: name))
            carryOut(incoming.abort(cancelled: true, tellPeer: false))
        }
        for name in chunked?.namesInProgress ?? [] { sendControl(CancelMessage.json(name: name)) }
        abortChunked(cancelled: true)
    }

    private func stopSending() {
        binarySender?.cancel()
        chunkedSender?.cancel()
        wakeSender()
    }

    private func wakeSender() {
        sendWaiter?.resume()
        sendWaiter = nil
    }

    /// Progress as the peer has it: bytes handed to the channel less those it may
    /// not have yet (the channel's buffer and SCTP's unacknowledged data). A
    /// sender that counted what it handed over printed 100% with 8 MB of 20 received.
    private func reportSent(name: String, handed: UInt64, total: UInt64) {
        let pending = UInt64(max(0, channel.unacknowledgedAmount))
        onProgress(Progress(name: name, bytes: handed - min(handed, pending), total: total, sending: true))
    }

    /// Waits for the receiver's ack (or a cancel, a close, the timeout),
    /// reporting progress while SCTP drains.
    private func waitForAck(name: String, total: UInt64, within wait: Duration) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(for: wait)
            guard !Task.isCancelled else { return }
            await self?.ackWaitEnded()
        }
        defer { timer.cancel() }
        let reporter = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                guard !Task.isCancelled, let self else { return }
                await self.reportSent(name: name, handed: total, total: total)
            }
        }
        await withCheckedContinuation { sendWaiter = $0 }
        reporter.cancel()
    }

    private func ackWaitEnded() {
        binarySender?.ackWaitEnded()
        wakeSender()
    }

    private func waitForDrain() async {
        guard channel.bufferedAmount > Self.lowWater, !closed else { return }
        await withCheckedContinuation { sendWaiter = $0 }
    }

    /// Sends a message of the protocol's own (not file bytes). It fails only
    /// when the channel has closed: then nobody is left to tell, the transfer
    /// ends with the channel (`channelEnded`), and the loss is only counted.
    private func sendControl(_ text: String) {
        do { try channel.send(text) } catch { controlMessagesUnsent += 1 }
    }

    /// Handles one of the channel's events; returns it as the application's
    /// message when it is not the file protocols' (text that is none of their
    /// messages, or bytes outside a file being received).
    private func take(_ event: DataChannel.Event) -> Message? {
        switch event {
        case .bufferedAmountLow:
            wakeSender()
        case .text(let text):
            if text == Self.hello {
                peerSpeaksBinary = true
                releaseHelloWaiters()
                return nil
            }
            switch FileMessage(json: text) {
            case .ack(let name, let size, let sha256, let ok)?:
                // Before the last byte: a refusal (or a cut-short receive) the sender stops for.
                binarySender?.acknowledged(.ack(name: name, size: size, sha256: sha256, ok: ok))
                wakeSender()
            case .header(let name, let size, let sha256)?:
                carryOut(incoming.header(name: name, size: size, sha256: sha256))
            case nil:
                if let chunk = ChunkMessage(json: text) {
                    receiveChunk(chunk)
                } else if CancelMessage.isCancel(text) {
                    peerCancelled()
                } else {
                    return .text(text)  // not the file protocol's: the application's
                }
            }
        case .binary(let bytes):
            // Bytes belong to the file being received; outside a transfer, to the application.
            guard incoming.receivingName != nil else { return .binary(bytes) }
            carryOut(incoming.bytes(bytes))
        case .open:
            releaseOpenWaiters(true)
        case .closed:
            channelEnded()
        }
        return nil
    }

    private func channelEnded() {
        closed = true
        releaseOpenWaiters(false)
        releaseHelloWaiters()
        senderChannelClosed()
        wakeSender()
        carryOut(incoming.abort(cancelled: false, tellPeer: false))
        abortChunked(cancelled: false)
    }

    /// Does what the binary receiver says, in its order.
    private func carryOut(_ actions: [BinaryReceiver.Action]) {
        for action in actions {
            switch action {
            case .progress(let progress): onProgress(progress)
            case .ended(let outcome): onReceived(outcome)
            case .reply(let text): sendControl(text)
            }
        }
    }

    /// The peer sent `file-cancel`: whatever is under way stops.
    private func peerCancelled() {
        stopSending()
        carryOut(incoming.abort(cancelled: true, tellPeer: false))
        abortChunked(cancelled: true)
    }

    // MARK: JSON chunks (reference peers)

    private func receiveChunk(_ chunk: ChunkMessage) {
        switch chunked?.receive(chunk) {
        case .progress(let progress)?: onProgress(progress)
        case .ended(let outcome)?: onReceived(outcome)
        case nil: break
        }
    }

    private func abortChunked(cancelled: Bool) {
        for outcome in chunked?.abortAll(cancelled: cancelled) ?? [] { onReceived(outcome) }
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        (ContinuousClock.now - start).inSeconds
    }
}
