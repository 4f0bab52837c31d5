/// The reading side of a stream channel's flow control, as a value: what the
/// reader holds unread, whether it asked the writer to pend (because too much
/// waits unread, or because the application asked), and which `pend` or
/// `resume` each change calls for. No clock, no socket: `StreamChannel` keeps
/// one under its lock and sends each signal it returns before it lets go of
/// that lock, so the signals leave in the order they were decided (see
/// `StreamChannel.receive`).
struct ReadWindow: Sendable, Equatable {
    /// What the writer must be told.
    enum Signal: String, Sendable, Equatable {
        case pend, resume
    }

    /// Above this many unread bytes the writer is asked to pend; below `resumeBelow`, to resume.
    let pendAbove: Int
    let resumeBelow: Int
    /// Bytes received and not read yet.
    private(set) var unread = 0
    /// We pended because of `unread`, or because the application asked.
    private(set) var pendedForRoom = false
    private(set) var pendedByHand = false

    init(pendAbove: Int, resumeBelow: Int) {
        self.pendAbove = pendAbove
        self.resumeBelow = resumeBelow
    }

    /// Whether the writer is pended by us now, for either reason.
    var isPended: Bool { pendedForRoom || pendedByHand }

    /// Bytes arrived: a pend once they pass `pendAbove` (none if the writer is pended already).
    mutating func received(_ count: Int) -> Signal? {
        unread += count
        guard unread > pendAbove, !pendedForRoom else { return nil }
        let wasPended = isPended
        pendedForRoom = true
        return wasPended ? nil : .pend
    }

    /// Bytes taken without a read (an unreliable channel dropping its oldest).
    mutating func discarded(_ count: Int) { unread = max(0, unread - count) }

    /// The reader took bytes: a resume once they fall below `resumeBelow`,
    /// unless the application still pends by hand.
    mutating func read(_ count: Int) -> Signal? {
        unread = max(0, unread - count)
        guard pendedForRoom, unread < resumeBelow else { return nil }
        pendedForRoom = false
        return pendedByHand ? nil : .resume
    }

    /// The application pends the writer (the reference's pendChannel).
    mutating func pendByHand() -> Signal? {
        guard !pendedByHand else { return nil }
        let wasPended = isPended
        pendedByHand = true
        return wasPended ? nil : .pend
    }

    /// The application lets the writer go on; a resume unless there is still no room.
    mutating func resumeByHand() -> Signal? {
        guard pendedByHand else { return nil }
        pendedByHand = false
        return pendedForRoom ? nil : .resume
    }
}
