import RtcRTP

/// Puts one stream's RTP packets back in order (a jitter buffer, RFC 3550 §A.8
/// sequence handling), waits a bounded time for a missing packet, and lists
/// the gaps worth a NACK. Pure logic: time is passed in (seconds, any origin),
/// so every case can be tested without sockets or clocks.
///
/// Packets in order go out at once; only a gap holds the packets behind it,
/// and for as long as the network makes that worthwhile (`currentWait`): the
/// delay variation measured over the recent packets (how much later than the
/// earliest of them each one arrived, for its RTP time; the 95th percentile),
/// a margin, and for video the round trips its NACKs need. A packet later
/// than that is late: audio conceals it, video asks again or for a keyframe.
public struct JitterBuffer: Sendable {
    /// How long gaps wait, how NACKs repeat, how much is held.
    public struct Settings: Sendable, Equatable {
        /// The longest a gap may hold back later packets, however bad the
        /// network (see `video`; audio's is 0.2 s, then it conceals).
        public var maxWait: Double = 0.8
        /// What a gap waits beyond the measured delay variation.
        public var margin: Double = 0.01
        /// The stream's RTP clock (48 kHz Opus, 90 kHz video).
        public var clockRate: Double = 90000
        /// Whether a gap also waits for its NACKs to be answered (`maxNacks`
        /// round trips, each at least `nackInterval`): video, where a
        /// retransmission beats a keyframe; audio conceals instead.
        public var waitsForRetransmission = true
        /// Time between NACKs for the same packet on a calm network (see `nackSpacing`).
        public var nackInterval: Double = 0.04
        /// NACKs per packet before waiting it out.
        public var maxNacks = 3
        /// Packets held at most; beyond it the oldest gap is given up at once.
        public var capacity = 1024
        /// Packets whose delay the variation is measured over.
        public var window = 128

        /// The video settings.
        public init() {}

        /// For video: a gap also waits for its NACKs, for up to 0.8 s. A
        /// packet a full bottleneck queue dropped is retransmitted into the
        /// same queue, so it comes a queue's delay after the NACK (0.2 s and
        /// more on a slow uplink), and a gap given up costs more than that:
        /// a PLI, a keyframe, and the keyframe's own trip through the queue.
        /// At 0.2 s a 400 kbit/s link's drops ended in PLIs and 0.6-0.9 s
        /// without a new picture; 0.8 s lets a 0.2 s queue answer three
        /// NACKs. (libwebrtc waits up to 3 s for a delta frame's packets
        /// before it asks for a keyframe.)
        public static let video = Settings()
        /// For audio (48 kHz): a gap waits for the jitter only; audio conceals.
        public static var audio: Settings {
            var settings = Settings()
            settings.clockRate = 48000
            settings.waitsForRetransmission = false
            settings.maxWait = 0.2
            return settings
        }
    }

    /// What comes out, in sequence order.
    public enum Output: Sendable, Equatable {
        case packet(RtpPacket)
        /// Packets that will not come: `count` sequence numbers were skipped.
        case lost(count: Int)
    }

    /// The settings it was made with.
    public let settings: Settings
    private var held: [UInt64: (packet: RtpPacket, arrival: Double)] = [:]
    private var next: UInt64?
    private var highest: UInt64?
    private var nacked: [UInt64: (count: Int, at: Double)] = [:]
    /// Packets inserted.
    public private(set) var packetsReceived = 0
    /// Packets inserted twice.
    public private(set) var duplicates = 0
    /// Packets that arrived after their gap had been given up.
    public private(set) var late = 0
    /// Sequence numbers given up.
    public private(set) var lost = 0
    /// Sequence numbers asked for again, counting repeats.
    public private(set) var nacksRequested = 0
    /// The round-trip time to the sender, when known (RTCP): what a NACK takes to be answered.
    public var roundTrip: Double?
    /// Each recent packet's arrival less its RTP time (a ring of `window`).
    private var transits: [Double] = []
    private var nextTransit = 0
    /// The newest RTP timestamp seen, and its value extended past wraps.
    private var newestTimestamp: (raw: UInt32, extended: Int64)?

    /// An empty buffer.
    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// The packet's sequence number extended to 64 bits around the highest seen.
    private func extend(_ sequence: UInt16) -> UInt64 {
        guard let highest else { return UInt64(sequence) + (1 << 32) }  // room to move back
        return UInt64(SequenceNumber.unwrap(sequence, near: Int64(highest)))
    }

    /// A packet that arrived at `arrival` (seconds); late and duplicate ones are counted and dropped.
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
        noteTransit(packet.timestamp, arrival: arrival)
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
            guard now >= entry.arrival + currentWait || held.count > settings.capacity else { break }
            let skipped = Int(firstHeld - expected)
            lost += skipped
            output.append(.lost(count: skipped))
            next = firstHeld
        }
        if let next { nacked = nacked.filter { $0.key >= next } }
        return output
    }

    /// Gives up every gap before `sequence`, a held packet that starts
    /// something decodable on its own (a video keyframe): once it decodes,
    /// nothing before it matters, so it does not wait out the gaps of the
    /// frames before it (libwebrtc's frame buffer decodes a complete keyframe
    /// whatever came before). The packets held before it go with their gaps;
    /// the sequence numbers that never came count as lost.
    public mutating func skipGaps(before sequence: UInt16) -> [Output] {
        let target = extend(sequence)
        guard let expected = next, expected < target, held[expected] == nil, held[target] != nil else { return [] }
        var missing = 0
        for skipped in expected..<target where held.removeValue(forKey: skipped) == nil { missing += 1 }
        lost += missing
        next = target
        nacked = nacked.filter { $0.key >= target }
        return [.lost(count: Int(target - expected))]
    }

    /// Sequence numbers to ask for again now (each at most `maxNacks` times, spaced).
    public mutating func nacks(now: Double) -> [UInt16] {
        guard let next, let highest, highest > next else { return [] }
        var wanted: [UInt16] = []
        let spacing = nackSpacing
        let from = max(next, highest > 512 ? highest - 512 : 0)
        for sequence in from..<highest where held[sequence] == nil {
            let previous = nacked[sequence]
            if let previous, previous.count >= settings.maxNacks || now - previous.at < spacing {
                continue
            }
            nacked[sequence] = ((previous?.count ?? 0) + 1, now)
            wanted.append(UInt16(truncatingIfNeeded: sequence))
        }
        nacksRequested += wanted.count
        return wanted
    }

    /// Whether nothing is held (no gap is waited for).
    public var isEmpty: Bool { held.isEmpty }

    /// When the gap that holds packets back now is given up, if one does
    /// (the receiver looks again then, not at its next tick).
    public var gapDeadline: Double? {
        guard let next, held[next] == nil, let first = held.min(by: { $0.key < $1.key }) else { return nil }
        return first.value.arrival + currentWait
    }

    /// How long a gap holds the packets behind it now (see the type's comment).
    public var currentWait: Double {
        let variation = delayVariation
        var wait = variation + settings.margin
        if settings.waitsForRetransmission {
            wait += Double(settings.maxNacks) * nackSpacing(variation: variation)
        }
        return min(wait, settings.maxWait)
    }

    /// How long a NACK's answer takes, so the same packet is not asked for
    /// again sooner: the round trip when RTCP gave one, and at least
    /// `nackInterval` beyond the delay variation. A receiver that sends no
    /// media learns no round trip, and on a slow uplink the retransmission
    /// waits in the same queue as the packets did, as long as the variation
    /// shows; asked again every 40 ms, the sender (which resends a packet
    /// once per round trip) let the second and third NACKs go unanswered.
    public var nackSpacing: Double { nackSpacing(variation: delayVariation) }

    private func nackSpacing(variation: Double) -> Double {
        max(settings.nackInterval + variation, roundTrip ?? 0)
    }

    /// How much later than the earliest of the recent packets the later ones
    /// arrive, for their RTP time (95th percentile), seconds.
    public var delayVariation: Double {
        guard transits.count > 1, let earliest = transits.min() else { return 0 }
        let sorted = transits.sorted()
        return sorted[Int(Double(sorted.count - 1) * 0.95)] - earliest
    }

    private mutating func noteTransit(_ timestamp: UInt32, arrival: Double) {
        let extended: Int64
        if let newest = newestTimestamp {
            extended = newest.extended + Int64(Int32(bitPattern: timestamp &- newest.raw))
            if extended > newest.extended { newestTimestamp = (timestamp, extended) }
        } else {
            extended = 0
            newestTimestamp = (timestamp, 0)
        }
        let transit = arrival - Double(extended) / settings.clockRate
        if transits.count < settings.window {
            transits.append(transit)
        } else {
            transits[nextTransit] = transit
            nextTransit = (nextTransit + 1) % settings.window
        }
    }
}
