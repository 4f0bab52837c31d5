import RtcCodecs
import RtcRTP

/// What a receive pipeline hands to its driver (`MediaReceiver`), in the
/// order the driver must act on it.
enum ReceivedMedia: Sendable {
    /// The first audio packet of the stream, before anything it yields (recordings open on it).
    case audioStarts(timestamp: UInt32)
    /// An Opus packet as received, in order, for the packet recordings.
    case opus(payload: [UInt8], timestamp: UInt32)
    /// 48 kHz stereo samples, decoded or made up for a gap by concealment or FEC.
    case pcm([Int16])
    /// A VP8 frame whole, as received; `mediaSeconds` from the stream's first frame.
    case vp8(data: [UInt8], timestamp: UInt32, keyframe: Bool, mediaSeconds: Double)
    /// A decoded picture.
    case picture(VideoFrame, timestamp: UInt32)
    /// A frame (audio packet or video picture) decoded now: for the latency meter and the first-frame date.
    case decoded(timestamp: UInt32)
    /// Feedback to send to the sender now: packets to send again (NACK) and whether to ask for a keyframe (PLI).
    case feedback(ssrc: UInt32, nacks: [UInt16], keyframe: Bool)
}

/// One media section's receive path as a pure core: RTP packets and the time
/// (seconds on any monotonic clock) go in; decoded media, what to record and
/// the feedback to send come out. It owns the jitter buffer and the decoder
/// and counts what it sees in `stats`; `MediaReceiver` drives it from the
/// ICE thread and a ticker, and does the I/O (files, sink, RTCP). Tests drive
/// it on virtual time.
protocol ReceivePipeline: Sendable {
    /// The counters it keeps (the driver fills in the rest of the statistics).
    var stats: MediaReceiver.Stats { get }
    /// The round-trip time from RTCP, for the jitter buffer's wait for retransmissions.
    var roundTrip: Double? { get set }
    /// Whether it holds packets or wants a keyframe: the driver then looks again soon.
    var isWaiting: Bool { get }
    /// When a gap it waits on is due to be given up.
    var gapDeadline: Double? { get }
    /// A packet arrived at `now`.
    mutating func receive(_ packet: RtpPacket, now: Double) -> [ReceivedMedia]
    /// Time passed: gaps given up, requests due.
    mutating func advance(now: Double) -> [ReceivedMedia]
    /// The stream ends: everything still held, gaps and all.
    mutating func flush() -> [ReceivedMedia]
}

/// The jitter buffer's side of the statistics, shared by both pipelines.
extension JitterBuffer {
    /// Counts a packet in `stats` and inserts it.
    mutating func take(_ packet: RtpPacket, now: Double, counting stats: inout MediaReceiver.Stats) {
        stats.packetsReceived += 1
        stats.bytesReceived += packet.payload.count
        insert(packet, arrival: now)
    }

    /// `stats` with the buffer's losses and late packets.
    func counted(into stats: MediaReceiver.Stats) -> MediaReceiver.Stats {
        var stats = stats
        stats.packetsLost = lost
        stats.lateOrDuplicate = late + duplicates
        return stats
    }
}
