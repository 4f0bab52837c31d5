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
    /// How far a transfer is, reported as it goes.
    public struct Progress: Sendable {
        /// The file's name, as offered.
        public var name: String
        /// Bytes done so far.
        public var bytes: UInt64
        /// The file's size.
        public var total: UInt64
        /// Whether we send it (or receive it).
        public var sending: Bool
    }

    /// How a transfer ended: exactly one per file, on both sides.
    public struct Outcome: Sendable, Equatable {
        /// The file's name, as offered.
        public var name: String
        /// Bytes transferred.
        public var bytes: UInt64
        /// The SHA-256 of what was transferred, hex.
        public var sha256: String
        /// Whether the receiver has the whole file with the sender's hash.
        public var ok: Bool
        /// From the offer to the end.
        public var seconds: Double
        /// Where a received file was saved (nil when sent, or when it failed).
        public var path: String?
        /// One side cancelled the transfer.
        public var cancelled = false
        /// The size the sender announced, when one came (received files).
        public var announcedBytes: UInt64?

        /// Fewer bytes arrived than were announced: the transfer was cut short
        /// (a closed channel, a lost connection), which is not a hash mismatch.
        public var isIncomplete: Bool { announcedBytes.map { bytes < $0 } ?? false }

        /// How it ended, in words: "sha256 ok", "incomplete: 1200 of 5000 bytes", "cancelled", "sha256 MISMATCH".
        public var verdict: String {
            if ok { return "sha256 ok" }
            if cancelled { return "cancelled after \(bytes) bytes" }
            if isIncomplete, let announcedBytes { return "incomplete: \(bytes) of \(announcedBytes) bytes" }
            return "sha256 MISMATCH"
        }
    }

    /// An application message on the channel: text or bytes that are not part
    /// of a file transfer (the reference SDK's sendText / onReceiveMessage).
    public enum Message: Sendable, Equatable {
        case text(String)
        case binary([UInt8])
    }

    /// Why a file could not be sent.
    public enum TransferError: Error, Equatable, Sendable, CustomStringConvertible {
        case busy
        case unreadable(String)
        case channelClosed
        case protocolViolation(String)
        case cancelled
        /// The receiver said no at once (no receive directory, too large, busy).
        case refused
        /// No acknowledgement came within a time that scales with the size.
        case noAcknowledgement(Duration)

        /// What went wrong, in words for a log or a user.
        public var description: String {
            switch self {
            case .cancelled: "the transfer was cancelled"
            case .refused: "the receiver refused the file (it takes no files, the file is too large, or it is busy)"
            case .noAcknowledgement(let wait): "no acknowledgement from the receiver within \(wait)"
            case .busy: "a file is already being sent on this channel"
            case .unreadable(let why): "cannot read the file: \(why)"
            case .channelClosed: "the data channel closed before the transfer finished"
            case .protocolViolation(let why): "file protocol: \(why)"
            }
        }
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

    private let channel: DataChannel
    private let receiveDirectory: String?
    private let maxReceiveSize: UInt64
    private let echo: Bool
    private let onProgress: @Sendable (Progress) -> Void
    private let onReceived: @Sendable (Outcome) -> Void
    private let onMessage: @Sendable (Message) -> Void
    private var drainWaiter: CheckedContinuation<Void, Never>?
    private var ackWaiter: CheckedContinuation<FileMessage?, Never>?
    /// An ack that came while still sending: the receiver refused the file.
    private var earlyAck: FileMessage?
    /// The binary protocol's file coming in, if one is.
    private var incoming: BinaryReceiver
    private var sending = false
    private var closed = false
    private var openWaiters: [CheckedContinuation<Bool, Never>] = []
    private var reader: Task<Void, Never>?
    private var cancelSending = false
    /// Files arriving as the reference peers' JSON chunks (only with a receive directory).
    private var chunked: ChunkedReceiver?
    /// Control messages (hello, cancel, refusal, final ack, echo) that could not
    /// go out because the channel had closed (`sendControl`).
    public private(set) var controlMessagesUnsent = 0
    /// The peer said it speaks the binary file protocol (DCEP protocol, or its `file-protocol` message).
    public private(set) var peerSpeaksBinary = false
    private let peerOpened: Bool
    private var helloWaiters: [CheckedContinuation<Void, Never>] = []
    /// Chunked files received at once, at most.
    static let maxChunkedFiles = 4

    /// An endpoint on an open data channel: files it receives go into `receiveDirectory` (none: refused), up to `maxReceiveSize`; `echo` sends text back; the callbacks report progress, received files and plain messages.
    public init(
        channel: DataChannel, receiveDirectory: String? = nil, maxReceiveSize: UInt64 = defaultMaxReceiveSize,
        echo: Bool = false, peerOpened: Bool = false, onProgress: @escaping @Sendable (Progress) -> Void = { _ in },
        onReceived: @escaping @Sendable (Outcome) -> Void = { _ in },
        onMessage: @escaping @Sendable (Message) -> Void = { _ in }
    ) {
        self.peerOpened = peerOpened
        self.onMessage = onMessage
        self.channel = channel
        self.receiveDirectory = receiveDirectory
        self.maxReceiveSize = maxReceiveSize
        self.echo = echo
        self.onProgress = onProgress
        self.onReceived = onReceived
        incoming = BinaryReceiver(directory: receiveDirectory, maxSize: maxReceiveSize)
        chunked = receiveDirectory.map {
            ChunkedReceiver(directory: $0, maxSize: maxReceiveSize, maxFiles: Self.maxChunkedFiles)
        }
        channel.bufferedAmountLowThreshold = Self.lowWater
    }

    /// Starts reading the channel's events; call once. On a channel the peer
    /// opened with `protocolName`, says that this side speaks it too.
    public func start() {
        guard reader == nil else { return }
        if peerOpened, channel.parameters.protocol == Self.protocolName {
            peerSpeaksBinary = true
            sendControl(Self.hello)
        }
        let events = channel.events
        reader = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.handle(event)
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
        sending = true
        defer { sending = false }
        let name = URL(fileURLWithPath: path).lastPathComponent
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value,
            let hashFile = BlockFile.openForReading(path), let file = BlockFile.openForReading(path)
        else { throw .unreadable(path) }
        // Hash first: the header carries the SHA-256 the receiver checks against.
        let digest = Sha256()
        do { try hashFile.forEachBlock(size: 1 << 20) { digest.update($0) } } catch {
            throw .unreadable("\(path): \(error.description)")
        }
        hashFile.close()
        let sha256 = Sha256.hex(digest.finish())
        let started = ContinuousClock.now
        do {
            try channel.send(FileMessage.header(name: name, size: size, sha256: sha256).json)
            var sent: UInt64 = 0
            var lastProgress = ContinuousClock.now
            cancelSending = false
            while sent < size {
                try await paceOrStop(name)
                let block = try Self.read(file, upTo: Self.chunkSize, path: path)
                guard !block.isEmpty else { throw TransferError.unreadable("\(path) ended early") }
                try channel.send(block)
                sent += UInt64(block.count)
                if ContinuousClock.now - lastProgress > .milliseconds(250) {
                    lastProgress = ContinuousClock.now
                    reportSent(name: name, handed: sent, total: size)
                }
            }
        } catch let error as TransferError {
            throw error
        } catch {
            throw .channelClosed
        }
        // The receiver has the last byte once SCTP drains: a minute, plus a second per MB.
        let wait = Duration.seconds(60) + .milliseconds(Int64(size / 1000))
        var ack = earlyAck
        earlyAck = nil
        if ack == nil { ack = await waitForAck(name: name, total: size, within: wait) }
        if cancelSending { throw .cancelled }
        guard case .ack(_, let bytes, let theirHash, let ok)? = ack else {
            throw closed ? .channelClosed : .noAcknowledgement(wait)
        }
        // A refusal (nothing taken, no hash), whether it came early or after the last byte.
        if !ok, bytes == 0, theirHash.isEmpty, size > 0 { throw .refused }
        return Outcome(
            name: name, bytes: bytes, sha256: theirHash, ok: ok && theirHash == sha256 && bytes == size,
            seconds: seconds(since: started), path: nil)
    }

    /// Sends a file as the reference peers' JSON chunks (base64), paced like the
    /// binary protocol. That format has no acknowledgement: the outcome is ok
    /// once every chunk is handed to the channel.
    public func sendChunked(path: String, mime: String = "application/octet-stream") async throws(TransferError)
        -> Outcome
    {
        guard !sending else { throw .busy }
        sending = true
        cancelSending = false
        defer { sending = false }
        let name = URL(fileURLWithPath: path).lastPathComponent
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value,
            let file = BlockFile.openForReading(path)
        else { throw .unreadable(path) }
        let fileId = UUID().uuidString.lowercased()
        let digest = Sha256()
        var sha256 = ""
        let started = ContinuousClock.now
        var sent: UInt64 = 0
        var index = 0
        var lastProgress = ContinuousClock.now
        do {
            while true {
                try await paceOrStop(name)
                let block = try Self.read(file, upTo: ChunkMessage.chunkSize, path: path)
                digest.update(block)
                sent += UInt64(block.count)
                let last = sent >= size || block.isEmpty
                var chunk = ChunkMessage(
                    fileId: fileId, index: index, mime: mime, end: last, data: block,
                    name: index == 0 ? name : nil, size: index == 0 ? size : nil)
                if last {
                    sha256 = Sha256.hex(digest.finish())
                    chunk.sha256 = sha256
                }
                try channel.send(chunk.json)
                index += 1
                if ContinuousClock.now - lastProgress > .milliseconds(250) || last {
                    lastProgress = ContinuousClock.now
                    onProgress(Progress(name: name, bytes: sent, total: size, sending: true))
                }
                if last { break }
            }
        } catch let error as TransferError {
            throw error
        } catch {
            throw .channelClosed
        }
        return Outcome(
            name: name, bytes: sent, sha256: sha256, ok: sent == size, seconds: seconds(since: started), path: nil)
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
        guard sending else { return }
        cancelSending = true
        drainWaiter?.resume()
        drainWaiter = nil
        ackWaiter?.resume(returning: nil)
        ackWaiter = nil
    }

    /// Before each message: stop if the transfer was cancelled (telling the
    /// peer), and wait while more than the high-water mark is buffered.
    /// Progress as the peer has it: bytes handed to the channel less those it may
    /// not have yet (the channel's buffer and SCTP's unacknowledged data). A
    /// sender that counted what it handed over printed 100% with 8 MB of 20 received.
    private func reportSent(name: String, handed: UInt64, total: UInt64) {
        let pending = UInt64(max(0, channel.unacknowledgedAmount))
        onProgress(Progress(name: name, bytes: handed - min(handed, pending), total: total, sending: true))
    }

    /// Waits for the receiver's ack, reporting progress while SCTP drains; the
    /// last report is the whole file once the receiver confirmed it.
    private func waitForAck(name: String, total: UInt64, within wait: Duration) async -> FileMessage? {
        // Closed or cancelled before we got here: nothing would wake the wait
        // (a hang-up at that moment left the sender waiting out its whole timeout).
        guard !closed, !cancelSending else { return nil }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: wait)
            guard !Task.isCancelled else { return }
            await self?.giveUpWaitingForAck()
        }
        defer { timer.cancel() }
        let reporter = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                guard !Task.isCancelled, let self else { return }
                await self.reportSent(name: name, handed: total, total: total)
            }
        }
        let ack = await withCheckedContinuation { ackWaiter = $0 }
        reporter.cancel()
        if case .ack(_, let bytes, _, true)? = ack {
            onProgress(Progress(name: name, bytes: bytes, total: total, sending: true))
        }
        return ack
    }

    private func giveUpWaitingForAck() {
        ackWaiter?.resume(returning: nil)
        ackWaiter = nil
    }

    private func paceOrStop(_ name: String) async throws(TransferError) {
        while true {
            if case .ack(_, _, _, false)? = earlyAck {
                earlyAck = nil
                throw .refused
            }
            if cancelSending {
                sendControl(CancelMessage.json(name: name))
                throw .cancelled
            }
            guard channel.bufferedAmount > Self.highWater else { return }
            await waitForDrain()
            if closed { throw .channelClosed }
        }
    }

    private func waitForDrain() async {
        guard channel.bufferedAmount > Self.lowWater, !closed else { return }
        await withCheckedContinuation { drainWaiter = $0 }
    }

    /// Sends a message of the protocol's own (not file bytes). It fails only
    /// when the channel has closed: then nobody is left to tell, the transfer
    /// ends with the channel (`channelEnded`), and the loss is only counted.
    private func sendControl(_ text: String) {
        do { try channel.send(text) } catch { controlMessagesUnsent += 1 }
    }

    /// See `sendControl(_:)` (the echo of binary messages).
    private func sendControl(_ bytes: [UInt8]) {
        do { try channel.send(bytes) } catch { controlMessagesUnsent += 1 }
    }

    private func handle(_ event: DataChannel.Event) {
        switch event {
        case .bufferedAmountLow:
            drainWaiter?.resume()
            drainWaiter = nil
        case .text(let text):
            if text == Self.hello {
                peerSpeaksBinary = true
                releaseHelloWaiters()
                return
            }
            if echo {
                sendControl(text)
                return
            }
            switch FileMessage(json: text) {
            case .ack?:
                if let ackWaiter {
                    ackWaiter.resume(returning: FileMessage(json: text))
                    self.ackWaiter = nil
                } else if sending {
                    // Before the last byte: a refusal (or a cut-short receive) the sender stops for.
                    earlyAck = FileMessage(json: text)
                    drainWaiter?.resume()
                    drainWaiter = nil
                }
            case .header(let name, let size, let sha256)?:
                carryOut(incoming.header(name: name, size: size, sha256: sha256))
            case nil:
                if let chunk = ChunkMessage(json: text) {
                    receiveChunk(chunk)
                } else if CancelMessage.isCancel(text) {
                    peerCancelled()
                } else {
                    onMessage(.text(text))  // not the file protocol's: the application's
                }
            }
        case .binary(let bytes):
            if echo {
                sendControl(bytes)
                return
            }
            // Bytes belong to the file being received; outside a transfer, to the application.
            if incoming.receivingName != nil { carryOut(incoming.bytes(bytes)) } else { onMessage(.binary(bytes)) }
        case .open:
            releaseOpenWaiters(true)
        case .closed:
            channelEnded()
        }
    }

    private func channelEnded() {
        closed = true
        releaseOpenWaiters(false)
        releaseHelloWaiters()
        drainWaiter?.resume()
        drainWaiter = nil
        ackWaiter?.resume(returning: nil)
        ackWaiter = nil
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
