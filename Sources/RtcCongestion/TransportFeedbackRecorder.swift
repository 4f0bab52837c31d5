import RtcRTP

/// The receiver's half of transport-wide congestion control: it notes when
/// each packet of the transport-wide sequence arrived and, when asked (every
/// 50-100 ms), writes the feedback that tells the sender. Bounded: it holds at
/// most `capacity` arrivals, and reports each sequence number once.
public struct TransportFeedbackRecorder: Sendable {
    /// Arrivals held before the oldest are reported lost unsent.
    public static let capacity = 1 << 13

    private var arrivals: [Int64: Int64] = [:]
    private var highest: Int64?
    /// The first sequence number not yet reported.
    private var nextToReport: Int64?
    private var feedbackCount: UInt8 = 0

    /// A recorder that has seen nothing yet.
    public init() {}

    /// A packet carrying transport-wide sequence number `sequence` arrived at `time` (µs, receiver's clock).
    public mutating func record(sequence: UInt16, at time: Int64) {
        let unwrapped = highest.map { SequenceNumber.unwrap(sequence, near: $0) } ?? Int64(sequence)
        if let nextToReport, unwrapped < nextToReport { return }  // reported already (as lost): too late
        arrivals[unwrapped] = time
        highest = max(highest ?? unwrapped, unwrapped)
        if nextToReport == nil { nextToReport = unwrapped }
        // A sender that skips far ahead must not make us report thousands of losses at once.
        if let highest, let first = nextToReport, highest - first >= Int64(Self.capacity) {
            let newFirst = highest - Int64(Self.capacity) + 1
            arrivals = arrivals.filter { $0.key >= newFirst }
            nextToReport = newFirst
        }
    }

    /// Feedback for everything since the last call, in as many packets as the
    /// deltas need; empty when nothing arrived.
    public mutating func makeFeedback(senderSsrc: UInt32, mediaSsrc: UInt32) -> [TransportFeedback] {
        guard var first = nextToReport, let highest, !arrivals.isEmpty else { return [] }
        var feedbacks: [TransportFeedback] = []
        let arrivals = self.arrivals
        while first <= highest {
            // The reference time: the first arrival, rounded down to 64 ms.
            guard let firstArrival = (first...highest).lazy.compactMap({ arrivals[$0] }).first else { break }
            let reference = firstArrival >= 0 ? firstArrival / 64_000 : (firstArrival - 63_999) / 64_000
            let referenceMicroseconds = reference * 64_000
            var entries: [Int64?] = []
            var previous = referenceMicroseconds
            var sequence = first
            while sequence <= highest, entries.count < TransportFeedback.maxPackets {
                if let arrival = arrivals[sequence] {
                    guard TransportFeedback.deltaFits(from: previous, to: arrival) else { break }
                    previous = arrival
                    entries.append(arrival - referenceMicroseconds)
                } else {
                    entries.append(nil)
                }
                sequence += 1
            }
            // Losses after the last arrival wait for the next feedback: they may still come.
            while entries.last.map({ $0 == nil }) == true {
                entries.removeLast()
                sequence -= 1
            }
            guard !entries.isEmpty else { break }
            feedbacks.append(
                TransportFeedback(
                    senderSsrc: senderSsrc, mediaSsrc: mediaSsrc, baseSequence: UInt16(truncatingIfNeeded: first),
                    referenceTime: Int32(truncatingIfNeeded: reference), feedbackCount: feedbackCount,
                    arrivals: entries))
            feedbackCount &+= 1
            for reported in first..<sequence { self.arrivals[reported] = nil }
            first = sequence
        }
        nextToReport = first
        return feedbacks
    }
}
