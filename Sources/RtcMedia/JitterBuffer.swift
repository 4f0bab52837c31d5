import RtcRTP

/// Puts one stream's RTP packets back in order (a jitter buffer, RFC 3550 §A.8
/// sequence handling), waits a bounded time for a missing packet, and lists
/// the gaps worth a NACK. Pure logic: time is passed in (seconds, any origin),
/// so every case can be tested without sockets or clocks.
public struct JitterBuffer: Sendable {
    public struct Settings: Sendable, Equatable {
        /// How long a gap may hold back later packets before it is given up.
        public var maxWait: Double = 0.2
        /// Time between NACKs for the same packet.
        public var nackInterval: Double = 0.04
        /// NACKs per packet before waiting it out.
        public var maxNacks = 3
        /// Packets held at most; beyond it the oldest gap is given up at once.
        public var capacity = 1024

        public init() {}
    }

    public enum Output: Sendable, Equatable {
        case packet(RtpPacket)
        /// Packets that will not come: `count` sequence numbers were skipped.
        case lost(count: Int)
    }

    public let settings: Settings
    private var held: [UInt64: (packet: RtpPacket, arrival: Double)] = [:]
    private var next: UInt64?
    private var highest: UInt64?
    private var nacked: [UInt64: (count: Int, at: Double)] = [:]
    public private(set) var packetsReceived = 0
    public private(set) var duplicates = 0
    /// Packets that arrived after their gap had been given up.
    public private(set) var late = 0
    public private(set) var lost = 0
    public private(set) var nacksRequested = 0

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// The packet's sequence number extended to 64 bits around the highest seen.
    private func extend(_ sequence: UInt16) -> UInt64 {
        guard let highest else { return UInt64(sequence) + (1 << 32) }  // room to move back
        let delta = Int64(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: highest)))
        return UInt64(Int64(highest) + delta)
    }

    public mutating func insert(_ packet: RtpPacket, arrival: Double) {
        let sequence = extend(packet.sequenceNumber)
        packetsReceived += 1
        if let next, sequence < next {
            late += 1
            return
        }
        guard held[sequence] == nil else {
            duplicates += 1
            return
        }
        held[sequence] = (packet, arrival)
        if next == nil { next = sequence }
        if highest.map({ sequence > $0 }) ?? true { highest = sequence }
    }

    /// Packets ready in order, and the gaps given up (after `maxWait`, or when full).
    public mutating func pop(now: Double) -> [Output] {
        var output: [Output] = []
        while let expected = next {
            if let entry = held.removeValue(forKey: expected) {
                output.append(.packet(entry.packet))
                next = expected + 1
                continue
            }
            guard let (firstHeld, entry) = held.min(by: { $0.key < $1.key }).map({ ($0.key, $0.value) }) else {
                break
            }
            guard now - entry.arrival >= settings.maxWait || held.count > settings.capacity else { break }
            let skipped = Int(firstHeld - expected)
            lost += skipped
            output.append(.lost(count: skipped))
            next = firstHeld
        }
        if let next { nacked = nacked.filter { $0.key >= next } }
        return output
    }

    /// Sequence numbers to ask for again now (each at most `maxNacks` times, spaced).
    public mutating func nacks(now: Double) -> [UInt16] {
        guard let next, let highest, highest > next else { return [] }
        var wanted: [UInt16] = []
        let from = max(next, highest > 512 ? highest - 512 : 0)
        for sequence in from..<highest where held[sequence] == nil {
            let previous = nacked[sequence]
            if let previous, previous.count >= settings.maxNacks || now - previous.at < settings.nackInterval {
                continue
            }
            nacked[sequence] = ((previous?.count ?? 0) + 1, now)
            wanted.append(UInt16(truncatingIfNeeded: sequence))
        }
        nacksRequested += wanted.count
        return wanted
    }

    public var isEmpty: Bool { held.isEmpty }
}
