import Foundation
import RtcPeer

/// Bytes both ways over one data channel, with what TCP has and data channels
/// lack: flow control (the reader's side asks the writer to pend and resume,
/// as the reference's multiplexer does), half-close (`finish`), and a reset
/// that the other side sees as one. A session stream's own data and each of
/// its channels (and each forwarded TCP connection) are one of these.
///
/// On the wire (docs/sessions.md): binary messages are data, text messages
/// are control, a JSON object with a `type`: `accept`, `refuse` (with a
/// `reason`), `pend`, `resume`, `eof`, `reset`.
public final class StreamChannel: @unchecked Sendable {
    /// What the application learns besides the data it reads.
    public enum Event: Sendable, Equatable {
        /// The peer asked us to stop writing (`write` waits until it resumes).
        case pending
        case resumed
        /// The peer finished writing; what it sent before can still be read.
        case endOfData
        /// The channel is closed: orderly, or reset (with the reason).
        case closed(reset: String?)
    }

    /// The data channel's label part after the stream id: the cookie
    /// (the service name for a forwarded connection).
    public let cookie: String
    /// Pends, resumes, the peer's end of data and the close, in order.
    public let events: AsyncStream<Event>
    let channel: DataChannel
    /// Unreliable channels have no handshake and no flow control (a control
    /// message could be lost): what the reader does not take in time is dropped.
    public var isReliable: Bool { channel.parameters.isReliable }

    /// The reader asks the writer to pend above this many unread bytes, to resume below `resumeBelow`.
    static let pendAbove = 1 << 20
    static let resumeBelow = 256 << 10
    /// A writer that goes on after a pend is cut off here (the reader's memory is bounded).
    static let hardLimit = 16 << 20
    /// The writer waits while the data channel holds more than this, unsent.
    static let sendBufferHigh = 1 << 20
    static let chunkSize = 64 << 10
    static let maxControlBytes = 1024
    /// The reset reason of a channel closed without its end of data (the connection went).
    static let connectionLost = "the connection to the peer closed"

    private let sink: AsyncStream<Event>.Continuation
    // Guarded by `lock`.
    private let lock = NSLock()
    private var received: [[UInt8]] = []
    /// Unread bytes and our pends (`receive`, `read`, `pend`, `resume`).
    private var window: ReadWindow
    private var dropped = 0
    private var readWaiter: CheckedContinuation<Void, Never>?
    private var writeWaiters: [CheckedContinuation<Void, Never>] = []
    /// Bumped by everything that may let a waiting writer go on.
    private var generation = 0
    private var opened = false
    private var acceptance: Result<Void, SessionError>?
    private var acceptWaiters: [CheckedContinuation<Void, Never>] = []
    private var peerPended = false
    private var peerFinished = false
    private var weFinished = false
    private var ended: SessionError?
    private var closedReported = false
    private var pump: Task<Void, Never>?

    init(channel: DataChannel, cookie: String, accepted: Bool) {
        self.channel = channel
        self.cookie = cookie
        (events, sink) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(64))
        if accepted || !channel.parameters.isReliable { acceptance = .success(()) }
        // An unreliable channel never pends for room: it drops its oldest instead.
        window = ReadWindow(
            pendAbove: channel.parameters.isReliable ? Self.pendAbove : .max, resumeBelow: Self.resumeBelow)
        channel.bufferedAmountLowThreshold = Self.sendBufferHigh / 4
        pump = Task { [weak self, channel] in
            for await event in channel.events { self?.handle(event) }
            self?.channelClosed()
        }
    }

    deinit { pump?.cancel() }

    /// The SCTP stream id of the data channel (the stream's id, for a stream's own channel).
    public var id: UInt16? { channel.id }

    // MARK: Opening

    /// Waits until the data channel is open and the peer accepted it.
    func waitAccepted() async throws(SessionError) {
        while true {
            let state = lock.withLock { () -> Result<Void, SessionError>? in
                if let ended { return .failure(ended) }
                return opened ? acceptance : nil
            }
            switch state {
            case .success: return
            case .failure(let error): throw error
            case nil: await withCheckedContinuation { continuation in wait(accept: continuation) }
            }
        }
    }

    private func wait(accept continuation: CheckedContinuation<Void, Never>) {
        let now = lock.withLock { () -> Bool in
            if ended != nil || (opened && acceptance != nil) { return true }
            acceptWaiters.append(continuation)
            return false
        }
        if now { continuation.resume() }
    }

    /// The accepting side says yes; data may follow at once.
    func accept() { sendControl(["type": "accept"]) }

    /// The accepting side says no; the opener's `waitAccepted` throws with the reason.
    func refuse(_ reason: String) {
        sendControl(["type": "refuse", "reason": String(reason.prefix(300))])
        finishChannel(.refused(reason))
    }

    // MARK: Writing

    /// Sends bytes, waiting while the peer pends us or the send buffer is full.
    /// Throws once the channel is closed, reset, or finished by us.
    public func write(_ bytes: [UInt8]) async throws(SessionError) {
        var offset = 0
        while offset < bytes.count {
            try await waitUntilWritable()
            let end = min(bytes.count, offset + Self.chunkSize)
            do { try channel.send(Array(bytes[offset..<end])) } catch {
                throw lock.withLock { ended } ?? .closed
            }
            offset = end
        }
    }

    private func waitUntilWritable() async throws(SessionError) {
        while true {
            let (seen, blocked, failure) = lock.withLock { () -> (Int, Bool, SessionError?) in
                (generation, peerPended, ended ?? (weFinished ? .finished : nil))
            }
            if let failure { throw failure }
            if !blocked, channel.bufferedAmount <= Self.sendBufferHigh { return }
            await withCheckedContinuation { continuation in
                let now = lock.withLock { () -> Bool in
                    guard generation == seen else { return true }
                    writeWaiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }

    /// No more data from us (the peer reads the end after what we sent): TCP's half-close.
    public func finish() {
        let closeNow = lock.withLock { () -> Bool? in
            guard !weFinished, ended == nil else { return nil }
            weFinished = true
            return peerFinished && received.isEmpty
        }
        guard let closeNow else { return }
        sendControl(["type": "eof"])
        if closeNow { finishChannel(nil) }
    }

    // MARK: Reading

    /// The next bytes the peer sent; nil after its end of data (or an orderly
    /// close). Throws when the channel was reset or lost before its end.
    public func read() async throws(SessionError) -> [UInt8]? {
        while true {
            // With what it returns: whether both sides are now done (the last read closes).
            let (outcome, close) = lock.withLock { () -> (Result<[UInt8]?, SessionError>?, Bool) in
                let done = { self.weFinished && self.peerFinished && self.received.isEmpty && self.ended == nil }
                if !received.isEmpty {
                    let bytes = received.removeFirst()
                    send(window.read(bytes.count))
                    return (.success(bytes), done())
                }
                if peerFinished { return (.success(nil), done()) }
                if let ended { return (ended == .closed ? .success(nil) : .failure(ended), false) }
                return (nil, false)
            }
            switch outcome {
            case .success(let bytes):
                if close { finishChannel(nil) }
                return bytes
            case .failure(let error): throw error
            case nil:
                await withCheckedContinuation { continuation in
                    let now = lock.withLock { () -> Bool in
                        if !received.isEmpty || peerFinished || ended != nil { return true }
                        readWaiter = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            }
        }
    }

    /// Asks the peer to stop writing until `resume` (the reference's pendChannel).
    public func pend() { lock.withLock { send(window.pendByHand()) } }

    /// Lets the peer write again after `pend()`.
    public func resume() { lock.withLock { send(window.resumeByHand()) } }

    /// With `lock` held: sends a pend or resume that `window` decided, before
    /// anything else can change it. Sent after the lock was let go, a resume
    /// decided on the reader's thread could overtake the pend decided just
    /// before it on the pump's, and the writer stayed pended for good (a 100 MB
    /// forward stalled at 29 MB in CI). `channel.send` only queues, and calls
    /// nothing of ours.
    private func send(_ signal: ReadWindow.Signal?) {
        if let signal { sendControl(["type": signal.rawValue]) }
    }

    /// Bytes received and not read yet, and bytes dropped (unreliable channels only).
    public var unread: (bytes: Int, dropped: Int) { lock.withLock { (window.unread, dropped) } }

    // MARK: Closing

    /// Closes at once: the peer's reads and writes fail with a reset.
    public func reset(_ reason: String = "reset by the peer") {
        sendControl(["type": "reset", "reason": String(reason.prefix(300))])
        finishChannel(.reset(reason))
    }

    /// Closes; what the peer had not read yet is lost. `finish` first for an orderly end.
    public func close() { finishChannel(.closed) }

    // MARK: From the data channel

    private func handle(_ event: DataChannel.Event) {
        switch event {
        case .open:
            let waiters = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                opened = true
                return acceptance != nil ? takeAcceptWaiters() : []
            }
            for waiter in waiters { waiter.resume() }
        case .binary(let bytes):
            receive(bytes)
        case .text(let text):
            control(text)
        case .bufferedAmountLow:
            wakeWriters()
        case .closed:
            channelClosed()
        }
    }

    private func receive(_ bytes: [UInt8]) {
        let (violation, reader) = lock.withLock { () -> (String?, CheckedContinuation<Void, Never>?) in
            guard ended == nil else { return (nil, nil) }
            if peerFinished { return ("data after the end of data", nil) }
            if !isReliable {
                // Late data is worth less than new: drop the oldest.
                while window.unread + bytes.count > Self.pendAbove, !received.isEmpty {
                    window.discarded(received.removeFirst().count)
                    dropped += 1
                }
            } else if window.unread + bytes.count > Self.hardLimit {
                return ("the peer wrote \(Self.hardLimit >> 20) MB past a pend", nil)
            }
            received.append(bytes)
            send(window.received(bytes.count))
            defer { readWaiter = nil }
            return (nil, readWaiter)
        }
        reader?.resume()
        if let violation { reset(violation) }
    }

    private func control(_ text: String) {
        guard text.utf8.count <= Self.maxControlBytes,
            let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let type = object["type"] as? String
        else { return reset("a control message that is not one") }
        let reason = (object["reason"] as? String).map { String($0.prefix(300)) }
        switch type {
        case "accept", "refuse":
            let waiters = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                guard acceptance == nil else { return [] }
                acceptance = type == "accept" ? .success(()) : .failure(.refused(reason ?? "refused"))
                return opened ? takeAcceptWaiters() : []
            }
            for waiter in waiters { waiter.resume() }
            if type == "refuse" { finishChannel(.refused(reason ?? "refused")) }
        case "pend", "resume":
            let changed = lock.withLock { () -> Bool in
                defer { peerPended = type == "pend" }
                return peerPended != (type == "pend")
            }
            if changed { sink.yield(type == "pend" ? .pending : .resumed) }
            if type == "resume" { wakeWriters() }
        case "eof":
            let (reader, close) = lock.withLock { () -> (CheckedContinuation<Void, Never>?, Bool) in
                peerFinished = true
                defer { readWaiter = nil }
                return (readWaiter, weFinished && received.isEmpty)
            }
            reader?.resume()
            sink.yield(.endOfData)
            if close { finishChannel(nil) }
        case "reset":
            finishChannel(.reset(reason ?? "reset by the peer"))
        default:
            break  // a newer peer's control: ignored
        }
    }

    /// The data channel closed (by the peer, or with the whole connection).
    private func channelClosed() {
        let orderly = lock.withLock { peerFinished || ended != nil }
        finishChannel(orderly ? .closed : .reset(Self.connectionLost))
    }

    private func wakeWriters() {
        let waiters = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            generation += 1
            defer { writeWaiters = [] }
            return writeWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func takeAcceptWaiters() -> [CheckedContinuation<Void, Never>] {
        defer { acceptWaiters = [] }
        return acceptWaiters
    }

    /// Ends the channel once: `nil` for an orderly end after both eofs.
    private func finishChannel(_ reason: SessionError?) {
        let (wake, report) = lock.withLock { () -> ([CheckedContinuation<Void, Never>], Bool) in
            if ended == nil { ended = reason ?? .closed }
            generation += 1
            let wake = writeWaiters + acceptWaiters + (readWaiter.map { [$0] } ?? [])
            writeWaiters = []
            acceptWaiters = []
            readWaiter = nil
            defer { closedReported = true }
            return (wake, !closedReported)
        }
        for waiter in wake { waiter.resume() }
        guard report else { return }
        channel.close()
        let resetReason: String? =
            switch reason {
            case .reset(let why)?: why
            case .refused(let why)?: why
            case nil, .closed?: nil
            case let other?: other.description
            }
        sink.yield(.closed(reset: resetReason))
        sink.finish()
    }

    private func sendControl(_ object: [String: String]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        // Fails only on a closed channel, whose close ends the stream on both sides anyway.
        try? channel.send(String(decoding: data, as: UTF8.self))
    }
}
