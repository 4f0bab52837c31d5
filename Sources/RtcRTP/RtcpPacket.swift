/// RTCP packets (RFC 3550 §6, RFC 4585 feedback, RFC 5104 FIR). A compound
/// packet is a list of these; `parseCompound` reads one, `serialize` writes one.
public enum RtcpPacket: Equatable, Sendable {
    case senderReport(SenderReport)
    case receiverReport(ReceiverReport)
    case sourceDescription([SdesChunk])
    case goodbye(ssrcs: [UInt32], reason: String?)
    /// Generic NACK (RTPFB, FMT 1): the sequence numbers the receiver lacks.
    case nack(senderSsrc: UInt32, mediaSsrc: UInt32, lost: [UInt16])
    /// Picture loss indication (PSFB, FMT 1).
    case pli(senderSsrc: UInt32, mediaSsrc: UInt32)
    /// Full intra request (PSFB, FMT 4).
    case fir(senderSsrc: UInt32, entries: [FirEntry])
    /// Transport-wide congestion control feedback (RTPFB, FMT 15): when each packet arrived.
    case transportFeedback(TransportFeedback)
    /// Receiver estimated maximum bitrate (PSFB, FMT 15, draft-alvestrand-rmcat-remb-03):
    /// what the receiver thinks the path carries for these media SSRCs, in bit/s.
    case remb(senderSsrc: UInt32, bitrate: UInt64, ssrcs: [UInt32])
    /// Any other packet (XR, APP, ...), kept as it came.
    case other(type: UInt8, count: UInt8, body: [UInt8])

    /// A sender report (RFC 3550 §6.4.1): what a sender sent, on its two clocks, and its reception reports.
    public struct SenderReport: Equatable, Sendable {
        /// The sender's SSRC.
        public var ssrc: UInt32
        /// NTP timestamp: seconds since 1900 in the high 32 bits, fraction in the low.
        public var ntpTime: UInt64
        /// The RTP timestamp that stands for the same instant as `ntpTime`.
        public var rtpTime: UInt32
        /// Packets sent so far.
        public var packetCount: UInt32
        /// Payload bytes sent so far.
        public var octetCount: UInt32
        /// Reception reports on the streams it receives.
        public var reports: [ReportBlock]

        /// A sender report as written or read.
        public init(
            ssrc: UInt32, ntpTime: UInt64, rtpTime: UInt32, packetCount: UInt32, octetCount: UInt32,
            reports: [ReportBlock] = []
        ) {
            self.ssrc = ssrc
            self.ntpTime = ntpTime
            self.rtpTime = rtpTime
            self.packetCount = packetCount
            self.octetCount = octetCount
            self.reports = reports
        }
    }

    /// A receiver report (RFC 3550 §6.4.2): reception reports from a participant that sends nothing.
    public struct ReceiverReport: Equatable, Sendable {
        /// The reporter's SSRC.
        public var ssrc: UInt32
        /// Its reception reports.
        public var reports: [ReportBlock]
        /// A receiver report as written or read.
        public init(ssrc: UInt32, reports: [ReportBlock]) {
            self.ssrc = ssrc
            self.reports = reports
        }
    }

    /// One reception report block (RFC 3550 §6.4.1).
    public struct ReportBlock: Equatable, Sendable {
        /// The SSRC the block reports on.
        public var ssrc: UInt32
        /// Loss since the last report, in 1/256.
        public var fractionLost: UInt8
        /// 24-bit signed on the wire.
        public var cumulativeLost: Int32
        /// The highest sequence number received, extended by its wrap count.
        public var extendedHighestSequence: UInt32
        /// Interarrival jitter, in timestamp units.
        public var jitter: UInt32
        /// Middle 32 bits of the last SR's NTP time, and the delay since it in 1/65536 s.
        public var lastSenderReport: UInt32
        /// (See `lastSenderReport`.) Zero if no sender report came yet.
        public var delaySinceLastSenderReport: UInt32

        /// A report block as written or read.
        public init(
            ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, extendedHighestSequence: UInt32, jitter: UInt32,
            lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32
        ) {
            self.ssrc = ssrc
            self.fractionLost = fractionLost
            self.cumulativeLost = cumulativeLost
            self.extendedHighestSequence = extendedHighestSequence
            self.jitter = jitter
            self.lastSenderReport = lastSenderReport
            self.delaySinceLastSenderReport = delaySinceLastSenderReport
        }
    }

    /// Source description items of one SSRC (RFC 3550 §6.5).
    public struct SdesChunk: Equatable, Sendable {
        /// The SSRC described.
        public var ssrc: UInt32
        /// Items by type (1 CNAME, 2 NAME, ...).
        public var items: [(type: UInt8, value: String)]
        /// A chunk with its items.
        public init(ssrc: UInt32, items: [(type: UInt8, value: String)]) {
            self.ssrc = ssrc
            self.items = items
        }
        /// Equal SSRC and items, in order (tuples are not Equatable).
        public static func == (lhs: SdesChunk, rhs: SdesChunk) -> Bool {
            lhs.ssrc == rhs.ssrc && lhs.items.map(\.type) == rhs.items.map(\.type)
                && lhs.items.map(\.value) == rhs.items.map(\.value)
        }
    }

    /// One full intra request (RFC 5104 §4.3.1): a keyframe asked of an SSRC.
    public struct FirEntry: Equatable, Sendable {
        /// The SSRC asked for a keyframe.
        public var ssrc: UInt32
        /// The request's number: a repeat of the same request keeps it.
        public var sequenceNumber: UInt8
        /// A request as written or read.
        public init(ssrc: UInt32, sequenceNumber: UInt8) {
            self.ssrc = ssrc
            self.sequenceNumber = sequenceNumber
        }
    }

    /// True for the first byte of an RTCP packet in a muxed stream (RFC 5761 §4: payload types 192-223).
    public static func isRtcp(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 8 && (192...223).contains(bytes[1])
    }

    /// Reads every packet of a compound RTCP packet.
    public static func parseCompound(_ bytes: [UInt8]) throws(RtpError) -> [RtcpPacket] {
        var packets: [RtcpPacket] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else { throw .truncated }
            let first = bytes[offset]
            guard first >> 6 == 2 else { throw .badVersion(first >> 6) }
            let count = first & 0x1F
            let type = bytes[offset + 1]
            let length = ((Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])) + 1) * 4
            guard offset + length <= bytes.count else { throw .badLength }
            var body = Array(bytes[offset + 4..<offset + length])
            if first & 0x20 != 0 {
                guard let pad = body.last, pad > 0, Int(pad) <= body.count else { throw .badPadding }
                body.removeLast(Int(pad))
            }
            packets.append(try parse(type: type, count: count, body: body))
            offset += length
        }
        return packets
    }

    static func parse(type: UInt8, count: UInt8, body: [UInt8]) throws(RtpError) -> RtcpPacket {
        var reader = ByteReader(body)
        switch type {
        case 200:
            let ssrc = try reader.u32()
            let report = SenderReport(
                ssrc: ssrc, ntpTime: try reader.u64(), rtpTime: try reader.u32(), packetCount: try reader.u32(),
                octetCount: try reader.u32(), reports: try reportBlocks(&reader, count: count))
            return .senderReport(report)
        case 201:
            let ssrc = try reader.u32()
            return .receiverReport(ReceiverReport(ssrc: ssrc, reports: try reportBlocks(&reader, count: count)))
        case 202:
            var chunks: [SdesChunk] = []
            for _ in 0..<count {
                let ssrc = try reader.u32()
                var items: [(type: UInt8, value: String)] = []
                while true {
                    let itemType = try reader.u8()
                    if itemType == 0 {
                        // Items end with a null octet; the chunk pads to a 32-bit boundary.
                        while reader.offset % 4 != 0 { try reader.skip(1) }
                        break
                    }
                    let length = Int(try reader.u8())
                    items.append((itemType, String(decoding: try reader.take(length), as: UTF8.self)))
                }
                chunks.append(SdesChunk(ssrc: ssrc, items: items))
            }
            return .sourceDescription(chunks)
        case 203:
            var ssrcs: [UInt32] = []
            for _ in 0..<count { ssrcs.append(try reader.u32()) }
            var reason: String?
            if reader.remaining > 0 {
                let length = Int(try reader.u8())
                reason = String(decoding: try reader.take(length), as: UTF8.self)
            }
            return .goodbye(ssrcs: ssrcs, reason: reason)
        case 205 where count == 1:
            let sender = try reader.u32()
            let media = try reader.u32()
            var lost: [UInt16] = []
            while reader.remaining >= 4 {
                let pid = try reader.u16()
                let bitmask = try reader.u16()
                lost.append(pid)
                for bit in 0..<16 where bitmask & (1 << bit) != 0 { lost.append(pid &+ UInt16(bit + 1)) }
            }
            return .nack(senderSsrc: sender, mediaSsrc: media, lost: lost)
        case 205 where count == 15:
            return .transportFeedback(try TransportFeedback.parse(body: body))
        case 206 where count == 15 && body.count >= 16 && Array(body[8..<12]) == rembIdentifier:
            let sender = try reader.u32()
            try reader.skip(8)  // the media SSRC (always 0) and "REMB"
            let ssrcCount = Int(try reader.u8())
            let encoded = try reader.u24()
            // Six bits of exponent, eighteen of mantissa; a large exponent saturates rather than overflows.
            let exponent = Int(encoded >> 18)
            let mantissa = UInt64(encoded & 0x3_FFFF)
            let bitrate = exponent > 45 ? UInt64.max : mantissa << exponent
            var ssrcs: [UInt32] = []
            for _ in 0..<ssrcCount { ssrcs.append(try reader.u32()) }
            return .remb(senderSsrc: sender, bitrate: bitrate, ssrcs: ssrcs)
        case 206 where count == 1:
            return .pli(senderSsrc: try reader.u32(), mediaSsrc: try reader.u32())
        case 206 where count == 4:
            let sender = try reader.u32()
            _ = try reader.u32()  // media source: unused for FIR (RFC 5104 §4.3.1.2)
            var entries: [FirEntry] = []
            while reader.remaining >= 8 {
                let ssrc = try reader.u32()
                let sequence = try reader.u8()
                try reader.skip(3)
                entries.append(FirEntry(ssrc: ssrc, sequenceNumber: sequence))
            }
            return .fir(senderSsrc: sender, entries: entries)
        default:
            return .other(type: type, count: count, body: body)
        }
    }

    static func reportBlocks(_ reader: inout ByteReader, count: UInt8) throws(RtpError) -> [ReportBlock] {
        var blocks: [ReportBlock] = []
        for _ in 0..<count {
            let ssrc = try reader.u32()
            let fraction = try reader.u8()
            let rawLost = try reader.u24()
            // Sign-extend the 24-bit cumulative loss.
            let lost = Int32(bitPattern: rawLost & 0x80_0000 != 0 ? rawLost | 0xFF00_0000 : rawLost)
            blocks.append(
                ReportBlock(
                    ssrc: ssrc, fractionLost: fraction, cumulativeLost: lost, extendedHighestSequence: try reader.u32(),
                    jitter: try reader.u32(), lastSenderReport: try reader.u32(),
                    delaySinceLastSenderReport: try reader.u32()))
        }
        return blocks
    }

    /// The encoded packet (one packet; concatenate for a compound packet).
    public func serialized() -> [UInt8] {
        var body: [UInt8] = []
        let type: UInt8
        let count: UInt8
        switch self {
        case .senderReport(let report):
            (type, count) = (200, UInt8(min(report.reports.count, 31)))
            body.appendU32(report.ssrc)
            body.appendU64(report.ntpTime)
            body.appendU32(report.rtpTime)
            body.appendU32(report.packetCount)
            body.appendU32(report.octetCount)
            Self.write(report.reports.prefix(31), into: &body)
        case .receiverReport(let report):
            (type, count) = (201, UInt8(min(report.reports.count, 31)))
            body.appendU32(report.ssrc)
            Self.write(report.reports.prefix(31), into: &body)
        case .sourceDescription(let chunks):
            (type, count) = (202, UInt8(min(chunks.count, 31)))
            for chunk in chunks.prefix(31) {
                body.appendU32(chunk.ssrc)
                for item in chunk.items {
                    let value = Array(item.value.utf8.prefix(255))
                    body.append(item.type)
                    body.append(UInt8(value.count))
                    body += value
                }
                body.append(0)
                while body.count % 4 != 0 { body.append(0) }
            }
        case .goodbye(let ssrcs, let reason):
            (type, count) = (203, UInt8(min(ssrcs.count, 31)))
            for ssrc in ssrcs.prefix(31) { body.appendU32(ssrc) }
            if let reason {
                let value = Array(reason.utf8.prefix(255))
                body.append(UInt8(value.count))
                body += value
                while body.count % 4 != 0 { body.append(0) }
            }
        case .nack(let sender, let media, let lost):
            (type, count) = (205, 1)
            body.appendU32(sender)
            body.appendU32(media)
            for (pid, mask) in Self.nackPairs(lost) {
                body.appendU16(pid)
                body.appendU16(mask)
            }
        case .pli(let sender, let media):
            (type, count) = (206, 1)
            body.appendU32(sender)
            body.appendU32(media)
        case .fir(let sender, let entries):
            (type, count) = (206, 4)
            body.appendU32(sender)
            body.appendU32(0)
            for entry in entries {
                body.appendU32(entry.ssrc)
                body += [entry.sequenceNumber, 0, 0, 0]
            }
        case .transportFeedback(let feedback):
            (type, count) = (205, 15)
            body = feedback.body()
        case .remb(let sender, let bitrate, let ssrcs):
            (type, count) = (206, 15)
            body.appendU32(sender)
            body.appendU32(0)
            body += Self.rembIdentifier
            body.append(UInt8(min(ssrcs.count, 255)))
            // The smallest exponent whose mantissa fits in eighteen bits.
            var exponent: UInt32 = 0
            while exponent < 63, bitrate >> exponent > 0x3_FFFF { exponent += 1 }
            body.appendU24(min(exponent, 63) << 18 | UInt32(truncatingIfNeeded: bitrate >> exponent) & 0x3_FFFF)
            for ssrc in ssrcs.prefix(255) { body.appendU32(ssrc) }
        case .other(let otherType, let otherCount, let otherBody):
            (type, count) = (otherType, otherCount & 0x1F)
            body = otherBody
            while body.count % 4 != 0 { body.append(0) }
        }
        // Padding (RFC 3550 §6.4.1): zeros up to a 32-bit boundary, the last octet saying how many.
        let padding = (4 - body.count % 4) % 4
        if padding > 0 {
            body += [UInt8](repeating: 0, count: padding - 1) + [UInt8(padding)]
        }
        var bytes: [UInt8] = [0x80 | (padding > 0 ? 0x20 : 0) | count, type]
        bytes.appendU16(UInt16(body.count / 4))
        return bytes + body
    }

    /// "REMB": what tells a REMB from other application-layer feedback.
    static let rembIdentifier: [UInt8] = [0x52, 0x45, 0x4D, 0x42]

    static func write(_ blocks: ArraySlice<ReportBlock>, into body: inout [UInt8]) {
        for block in blocks {
            body.appendU32(block.ssrc)
            body.append(block.fractionLost)
            body.appendU24(UInt32(bitPattern: max(min(block.cumulativeLost, 0x7F_FFFF), -0x80_0000)) & 0xFF_FFFF)
            body.appendU32(block.extendedHighestSequence)
            body.appendU32(block.jitter)
            body.appendU32(block.lastSenderReport)
            body.appendU32(block.delaySinceLastSenderReport)
        }
    }

    /// Groups lost sequence numbers into (packet id, bitmask of the 16 following) pairs (RFC 4585 §6.2.1).
    static func nackPairs(_ lost: [UInt16]) -> [(UInt16, UInt16)] {
        var pairs: [(UInt16, UInt16)] = []
        for sequence in lost {
            if let last = pairs.last, case let distance = sequence &- last.0, distance >= 1, distance <= 16 {
                pairs[pairs.count - 1].1 |= 1 << (distance - 1)
            } else if pairs.last?.0 != sequence {
                pairs.append((sequence, 0))
            }
        }
        return pairs
    }
}
