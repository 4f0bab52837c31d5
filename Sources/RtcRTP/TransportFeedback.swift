/// Transport-wide congestion control feedback: RTPFB, FMT 15
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1). The receiver
/// tells the sender when each packet of the transport-wide sequence arrived,
/// which is what a send-side estimator (GCC) runs on.
///
/// Arrival times are kept as microseconds from the packet's reference time
/// (`referenceTime` × 64 ms), on the receiver's clock; on the wire each is a
/// delta from the previous arrival in 250 µs ticks.
public struct TransportFeedback: Equatable, Sendable {
    /// Who sends the feedback.
    public var senderSsrc: UInt32
    /// One of the streams it is about (transport-wide feedback covers them all).
    public var mediaSsrc: UInt32
    /// The transport-wide sequence number of the first packet reported.
    public var baseSequence: UInt16
    /// The receiver's time base, in 64 ms units (24-bit signed on the wire).
    public var referenceTime: Int32
    /// Counts feedback packets, so the sender can tell one was lost.
    public var feedbackCount: UInt8
    /// One entry per sequence number from `baseSequence` on: the arrival in µs
    /// after `referenceTime`, or nil for a packet that did not arrive.
    public var arrivals: [Int64?]

    /// Packets one feedback can report; the status count is 16 bits.
    public static let maxPackets = 0xFFFF
    /// 250 µs: the unit of a receive delta.
    public static let deltaTick: Int64 = 250

    /// Feedback as it goes on the wire.
    public init(
        senderSsrc: UInt32, mediaSsrc: UInt32, baseSequence: UInt16, referenceTime: Int32, feedbackCount: UInt8,
        arrivals: [Int64?]
    ) {
        self.senderSsrc = senderSsrc
        self.mediaSsrc = mediaSsrc
        self.baseSequence = baseSequence
        self.referenceTime = referenceTime
        self.feedbackCount = feedbackCount
        self.arrivals = arrivals
    }

    /// The reference time in µs.
    public var referenceMicroseconds: Int64 { Int64(referenceTime) * 64_000 }

    /// Whether a delta from `previous` to `next` (µs) can be written: two bytes, signed, in ticks.
    public static func deltaFits(from previous: Int64, to next: Int64) -> Bool {
        let ticks = (next - previous) / deltaTick
        return ticks >= Int64(Int16.min) && ticks <= Int64(Int16.max)
    }

    // Status symbols (§3.1.1).
    private static let notReceived: UInt8 = 0
    private static let smallDelta: UInt8 = 1
    private static let largeDelta: UInt8 = 2

    /// Reads the body after the common RTCP header (sender and media SSRC onwards).
    static func parse(body: [UInt8]) throws(RtpError) -> TransportFeedback {
        var reader = ByteReader(body)
        let sender = try reader.u32()
        let media = try reader.u32()
        let base = try reader.u16()
        let count = Int(try reader.u16())
        let rawReference = try reader.u24()
        let reference = Int32(bitPattern: rawReference & 0x80_0000 != 0 ? rawReference | 0xFF00_0000 : rawReference)
        let feedbackCount = try reader.u8()
        var symbols: [UInt8] = []
        symbols.reserveCapacity(count)
        while symbols.count < count {
            let chunk = try reader.u16()
            if chunk & 0x8000 == 0 {
                // Run length chunk: a symbol and how many times it repeats.
                let symbol = UInt8((chunk >> 13) & 0x3)
                let run = Int(chunk & 0x1FFF)
                guard run > 0 else { throw .badLength }
                symbols += repeatElement(symbol, count: min(run, count - symbols.count))
            } else if chunk & 0x4000 == 0 {
                // Status vector of fourteen one-bit symbols.
                for bit in (0..<14).reversed() where symbols.count < count {
                    symbols.append(UInt8((chunk >> UInt16(bit)) & 0x1))
                }
            } else {
                // Status vector of seven two-bit symbols.
                for pair in (0..<7).reversed() where symbols.count < count {
                    symbols.append(UInt8((chunk >> UInt16(pair * 2)) & 0x3))
                }
            }
        }
        var arrivals: [Int64?] = []
        arrivals.reserveCapacity(count)
        var time: Int64 = 0
        for symbol in symbols {
            switch symbol {
            case smallDelta:
                time += Int64(try reader.u8()) * deltaTick
                arrivals.append(time)
            case largeDelta:
                time += Int64(Int16(bitPattern: try reader.u16())) * deltaTick
                arrivals.append(time)
            case notReceived:
                arrivals.append(nil)
            default:
                throw .badLength  // the reserved symbol
            }
        }
        return TransportFeedback(
            senderSsrc: sender, mediaSsrc: media, baseSequence: base, referenceTime: reference,
            feedbackCount: feedbackCount, arrivals: arrivals)
    }

    /// The body after the common RTCP header, unpadded.
    func body() -> [UInt8] {
        let arrivals = self.arrivals.prefix(Self.maxPackets)
        var body: [UInt8] = []
        body.appendU32(senderSsrc)
        body.appendU32(mediaSsrc)
        body.appendU16(baseSequence)
        body.appendU16(UInt16(arrivals.count))
        body.appendU24(UInt32(bitPattern: referenceTime) & 0xFF_FFFF)
        body.append(feedbackCount)
        // Deltas in ticks, rounded down to the tick of each arrival so errors never add up.
        var symbols: [UInt8] = []
        var deltas: [Int64] = []
        var previousTick: Int64 = 0
        for arrival in arrivals {
            guard let arrival else {
                symbols.append(Self.notReceived)
                continue
            }
            let tick = arrival / Self.deltaTick
            let delta = max(min(tick - previousTick, Int64(Int16.max)), Int64(Int16.min))
            previousTick += delta
            symbols.append((0...255).contains(delta) ? Self.smallDelta : Self.largeDelta)
            deltas.append(delta)
        }
        Self.writeChunks(symbols, into: &body)
        var index = 0
        for symbol in symbols where symbol != Self.notReceived {
            if symbol == Self.smallDelta {
                body.append(UInt8(deltas[index]))
            } else {
                body.appendU16(UInt16(bitPattern: Int16(deltas[index])))
            }
            index += 1
        }
        return body
    }

    /// Packet status chunks (§3.1.3, §3.1.4): a run where seven or more symbols
    /// repeat, else a vector of fourteen one-bit symbols when they fit, else seven two-bit ones.
    private static func writeChunks(_ symbols: [UInt8], into body: inout [UInt8]) {
        var start = 0
        while start < symbols.count {
            var run = 1
            while start + run < symbols.count, symbols[start + run] == symbols[start], run < 0x1FFF { run += 1 }
            if run >= 7 {
                body.appendU16(UInt16(symbols[start]) << 13 | UInt16(run))
                start += run
                continue
            }
            let fourteen = symbols[start..<min(start + 14, symbols.count)]
            if fourteen.allSatisfy({ $0 <= 1 }) {
                var chunk: UInt16 = 0x8000
                for (offset, symbol) in fourteen.enumerated() { chunk |= UInt16(symbol) << UInt16(13 - offset) }
                body.appendU16(chunk)
                start += fourteen.count
            } else {
                let seven = symbols[start..<min(start + 7, symbols.count)]
                var chunk: UInt16 = 0xC000
                for (offset, symbol) in seven.enumerated() { chunk |= UInt16(symbol) << UInt16(12 - offset * 2) }
                body.appendU16(chunk)
                start += seven.count
            }
        }
    }
}
