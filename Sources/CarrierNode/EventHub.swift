/// Fans events out to every subscriber's AsyncStream. Each stream keeps at
/// most `bufferLimit` undelivered events (the newest), so a subscriber that
/// stops reading cannot make the node's memory grow without bound.
struct EventHub<Event: Sendable> {
    static var bufferLimit: Int { 4096 }
    private var subscribers: [UInt64: AsyncStream<Event>.Continuation] = [:]
    private var nextId: UInt64 = 0

    var isEmpty: Bool { subscribers.isEmpty }

    /// A new stream; `onEnd` runs when its reader drops it.
    mutating func subscribe(onEnd: @escaping @Sendable (UInt64) -> Void) -> AsyncStream<Event> {
        nextId += 1
        let id = nextId
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(Self.bufferLimit))
        continuation.onTermination = { _ in onEnd(id) }
        subscribers[id] = continuation
        return stream
    }

    mutating func remove(_ id: UInt64) { subscribers[id] = nil }

    func send(_ event: Event) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    mutating func finish() {
        let all = subscribers.values
        subscribers = [:]
        for continuation in all { continuation.finish() }
    }
}
