import Foundation
import RtcFileTransfer
import RtcPeer

/// Two ends of an in-memory message channel: what one sends, the other's
/// events deliver, in order. Its send buffer holds nothing unless told to
/// (`holding`): then every byte sent counts as buffered until `drain()`, so a
/// sender waits at its high-water mark for as long as a test wants.
final class MemoryChannel: MessageChannel, @unchecked Sendable {
    let protocolName: String
    let events: AsyncStream<DataChannel.Event>
    private let sink: AsyncStream<DataChannel.Event>.Continuation
    private let lock = NSLock()
    /// Strong both ways: a pair lives as long as either end is used.
    private var peer: MemoryChannel?
    private var state = DataChannel.ReadyState.open
    private var buffered = 0
    private var threshold = 0
    private var holds = false
    /// Waiting for the buffer to pass a mark (`waitUntilBuffered`).
    private var fullWaiter: (mark: Int, continuation: CheckedContinuation<Void, Never>)?

    private init(protocolName: String) {
        self.protocolName = protocolName
        (events, sink) = AsyncStream.makeStream()
        sink.yield(.open)
    }

    /// Two open ends, joined.
    static func pair(protocolName: String = FileTransferEndpoint.protocolName) -> (MemoryChannel, MemoryChannel) {
        let (one, other) = (MemoryChannel(protocolName: protocolName), MemoryChannel(protocolName: protocolName))
        one.peer = other
        other.peer = one
        return (one, other)
    }

    var readyState: DataChannel.ReadyState { lock.withLock { state } }
    var bufferedAmount: Int { lock.withLock { buffered } }
    var unacknowledgedAmount: Int { bufferedAmount }
    var bufferedAmountLowThreshold: Int {
        get { lock.withLock { threshold } }
        set { lock.withLock { threshold = newValue } }
    }

    /// Whether bytes sent stay in the buffer until `drain()`.
    var holding: Bool {
        get { lock.withLock { holds } }
        set { lock.withLock { holds = newValue } }
    }

    func send(_ text: String) throws(DataChannelError) { try deliver(.text(text), count: text.utf8.count) }
    func send(_ data: [UInt8]) throws(DataChannelError) { try deliver(.binary(data), count: data.count) }

    private func deliver(_ event: DataChannel.Event, count: Int) throws(DataChannelError) {
        let (open, full) = lock.withLock { () -> (Bool, CheckedContinuation<Void, Never>?) in
            guard state == .open else { return (false, nil) }
            if holds { buffered += count }
            guard let waiter = fullWaiter, buffered > waiter.mark else { return (true, nil) }
            fullWaiter = nil
            return (true, waiter.continuation)
        }
        guard open, let peer else { throw .notOpen(0) }
        peer.sink.yield(event)
        full?.resume()
    }

    /// Waits until more than `mark` bytes are buffered, or `timeout` passed; whether they are.
    func waitUntilBuffered(above mark: Int, timeout: Duration = .seconds(10)) async -> Bool {
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.releaseFullWaiter()
        }
        defer { timer.cancel() }
        await withCheckedContinuation { continuation in
            let ready = lock.withLock {
                guard buffered <= mark else { return true }
                fullWaiter = (mark, continuation)
                return false
            }
            if ready { continuation.resume() }
        }
        return bufferedAmount > mark
    }

    private func releaseFullWaiter() {
        lock.withLock { () -> CheckedContinuation<Void, Never>? in
            defer { fullWaiter = nil }
            return fullWaiter?.continuation
        }?.resume()
    }

    /// Empties the send buffer (`.bufferedAmountLow` follows).
    func drain() {
        lock.withLock { buffered = 0 }
        sink.yield(.bufferedAmountLow)
    }

    /// Closes both ends (each gets `.closed`).
    func close() {
        for end in [self, peer].compactMap({ $0 }) {
            end.lock.withLock { end.state = .closed }
            end.sink.yield(.closed)
            end.sink.finish()
        }
    }
}
