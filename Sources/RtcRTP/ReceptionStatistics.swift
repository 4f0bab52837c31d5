/// What a receiver knows about one incoming RTP stream (RFC 3550 A.1, A.3,
/// A.8): the extended highest sequence number, loss and interarrival jitter,
/// and the last sender report, from which it writes its reception report.
/// Time is passed in (seconds on any monotonic clock), so it tests without a clock.
public struct ReceptionStatistics: Sendable {
    /// The stream's SSRC.
    public let ssrc: UInt32
    /// Its RTP clock, per second (for jitter in seconds).
    public let clockRate: Double

    private var started = false
    private var baseSequence: UInt32 = 0
    private var maxSequence: UInt16 = 0
    private var cycles: UInt32 = 0
    /// Packets recorded, duplicates included (as RFC 3550 counts them).
    public private(set) var packetsReceived: UInt64 = 0
    /// Payload bytes recorded.
    public private(set) var bytesReceived: UInt64 = 0
    private var expectedPrior: UInt32 = 0
    private var receivedPrior: UInt64 = 0
    private var transit: Double?
    /// Interarrival jitter in timestamp units.
    public private(set) var jitter: Double = 0
    private var lastSenderReportMiddle: UInt32 = 0
    private var lastSenderReportArrival: Double?

    /// Statistics for a stream not yet heard from.
    public init(ssrc: UInt32, clockRate: UInt32) {
        self.ssrc = ssrc
        self.clockRate = Double(max(clockRate, 1))
    }

    /// Largest forward jump still taken as the same stream (A.1's MAX_DROPOUT).
    static let maxDropout: UInt16 = 3000

    /// One packet that arrived at `arrival` (seconds): sequence, loss and jitter move on.
    public mutating func record(sequence: UInt16, timestamp: UInt32, payloadBytes: Int, arrival: Double) {
        packetsReceived += 1
        bytesReceived += UInt64(payloadBytes)
        if !started {
            started = true
            baseSequence = UInt32(sequence)
            maxSequence = sequence
        } else {
            let delta = sequence &- maxSequence
            if delta > 0, delta < Self.maxDropout {
                if sequence < maxSequence { cycles &+= 1 << 16 }  // wrapped around
                maxSequence = sequence
            } else if delta >= UInt16.max - 100 {
                // A duplicate or a late packet: counted, the highest stays.
            } else if delta != 0 {
                // A large jump: the sender restarted its numbering.
                baseSequence = UInt32(sequence)
                maxSequence = sequence
                cycles = 0
            }
        }
        let arrivalUnits = arrival * clockRate
        let currentTransit = arrivalUnits - Double(timestamp)
        if let previous = transit {
            var difference = currentTransit - previous
            // Timestamps wrap at 2^32; fold the difference back into range.
            if difference > 2_147_483_648 { difference -= 4_294_967_296 }
            if difference < -2_147_483_648 { difference += 4_294_967_296 }
            jitter += (abs(difference) - jitter) / 16
        }
        transit = currentTransit
    }

    /// The highest sequence number seen, with its wrap count in the high bits.
    public var extendedHighestSequence: UInt32 { cycles &+ UInt32(maxSequence) }

    /// Packets the sequence numbers say were sent since the first one seen.
    public var expectedPackets: UInt32 { started ? extendedHighestSequence &- baseSequence &+ 1 : 0 }

    /// Packets expected but not received (may be negative with duplicates).
    public var packetsLost: Int64 { Int64(expectedPackets) - Int64(packetsReceived) }

    /// Interarrival jitter in seconds.
    public var jitterSeconds: Double { jitter / clockRate }

    /// Records a sender report's NTP time for the LSR/DLSR fields.
    public mutating func noteSenderReport(ntpTime: UInt64, arrival: Double) {
        lastSenderReportMiddle = UInt32((ntpTime >> 16) & 0xFFFF_FFFF)
        lastSenderReportArrival = arrival
    }

    /// The report block for this stream; advances the "since last report" counters.
    public mutating func makeReportBlock(now: Double) -> RtcpPacket.ReportBlock {
        let expected = expectedPackets
        let expectedInterval = expected &- expectedPrior
        let receivedInterval = packetsReceived - receivedPrior
        expectedPrior = expected
        receivedPrior = packetsReceived
        let lostInterval = Int64(expectedInterval) - Int64(receivedInterval)
        let fraction: UInt8 =
            expectedInterval == 0 || lostInterval <= 0
            ? 0 : UInt8(min(255, (lostInterval << 8) / Int64(expectedInterval)))
        let delay = lastSenderReportArrival.map { UInt32(max(0, min((now - $0) * 65536, Double(UInt32.max)))) } ?? 0
        return RtcpPacket.ReportBlock(
            ssrc: ssrc, fractionLost: fraction,
            cumulativeLost: Int32(clamping: max(min(packetsLost, 0x7F_FFFF), -0x80_0000)),
            extendedHighestSequence: extendedHighestSequence, jitter: UInt32(min(jitter, Double(UInt32.max))),
            lastSenderReport: lastSenderReportMiddle, delaySinceLastSenderReport: delay)
    }
}

/// NTP timestamps (RFC 3550 §4): seconds since 1900 with a 32-bit fraction.
public enum NtpTime {
    /// Seconds between 1900-01-01 and 1970-01-01.
    public static let unixEpochOffset: Double = 2_208_988_800

    /// The NTP timestamp of a Unix time.
    public static func from(unixSeconds: Double) -> UInt64 {
        let ntp = unixSeconds + unixEpochOffset
        let seconds = UInt64(ntp)
        let fraction = UInt64((ntp - Double(seconds)) * 4_294_967_296)
        return seconds << 32 | fraction
    }

    /// The Unix time of an NTP timestamp.
    public static func unixSeconds(_ ntp: UInt64) -> Double {
        Double(ntp >> 32) - unixEpochOffset + Double(ntp & 0xFFFF_FFFF) / 4_294_967_296
    }

    /// The middle 32 bits, as carried in LSR (units of 1/65536 s).
    public static func middle(_ ntp: UInt64) -> UInt32 { UInt32((ntp >> 16) & 0xFFFF_FFFF) }

    /// Round-trip time from a report block received at `arrivalNtp` (RFC 3550 §6.4.1), or nil
    /// when the block refers to no sender report yet.
    public static func roundTripSeconds(block: RtcpPacket.ReportBlock, arrivalNtp: UInt64) -> Double? {
        guard block.lastSenderReport != 0 else { return nil }
        let rtt = Int64(middle(arrivalNtp)) - Int64(block.lastSenderReport) - Int64(block.delaySinceLastSenderReport)
        return rtt < 0 ? 0 : Double(rtt) / 65536
    }
}
