/// The receiver's own estimate of the path, for senders that adapt only to
/// REMB (draft-alvestrand-rmcat-remb-03): aiortc offers goog-remb and not
/// transport-wide feedback. In the spirit of libwebrtc's
/// RemoteBitrateEstimatorSingleStream: one video stream's packets, each with
/// its RTP timestamp as the send time, so a frame's packets form one group
/// and the gaps between frames on arrival against their capture times feed
/// the same inter-arrival groups, trendline and AIMD as the send side
/// (`SendSideEstimator`); what arrives over the last half second (every
/// stream's packets) bounds how far the estimate grows. A sender that hears
/// nothing but REMB (aiortc ignores receiver reports) also needs to hear about
/// loss, which a full queue shows without a growing delay: over a second with
/// more than 10% of the video lost, the estimate is what arrived times
/// (1 - loss/2), GCC's loss-based rule (draft-ietf-rmcat-gcc-02 §6). Pure:
/// arrivals and time (µs) in, REMBs out.
public struct ReceiveSideEstimator: Sendable {
    /// A REMB at least this often (libwebrtc: every second)…
    static let interval: Int64 = 1_000_000
    /// …and at once when the estimate fell by this share since the last one.
    static let dropToSendAtOnce = 0.03

    private var groups = InterArrivalGroups()
    private var trendline = TrendlineEstimator()
    private var aimd: AimdRateControl
    private var incoming = AcknowledgedBitrate()
    /// The stream estimated on (the first video SSRC seen, on VP8's 90 kHz clock) and its unwrapped timestamps.
    private var ssrc: UInt32?
    static let videoClockRate = 90_000
    private var lastTimestamp: UInt32?
    private var sendTime: Int64 = 0
    private var lastRemb: (rate: Double, at: Int64)?
    /// The controller moves at most this often, as the send side's does on
    /// each feedback (per frame, an overuse would cut the rate three times
    /// over before the queue could drain), with the worst verdict since.
    static let updateInterval: Int64 = 100_000
    private var lastUpdate: Int64?
    private var overuseSinceUpdate = false
    /// The estimated stream's sequence numbers over the current loss window.
    static let lossWindow: Int64 = 1_000_000
    static let highLoss = 0.1
    private var lastSequence: UInt16?
    private var windowStart: Int64?
    private var windowReceived = 0
    private var windowExpected = 0
    /// The loss over the last complete window, 0-1.
    public private(set) var loss = 0.0

    /// Starts at `start` bit/s, within `minimum` and `maximum`.
    public init(start: Double = 300_000, minimum: Double = 30_000, maximum: Double = 10_000_000) {
        aimd = AimdRateControl(start: start, minimum: minimum, maximum: maximum)
    }

    /// The estimate now, bit/s.
    public var estimate: Double { aimd.rate }

    /// The stream the estimate is about, once a packet came.
    public var mediaSsrc: UInt32? { ssrc }

    /// One packet arrived at `now` (µs): its SSRC, RTP timestamp (on
    /// `clockRate`: 90 kHz for video) and size in bytes. Every packet counts
    /// in the incoming rate; the first video SSRC's also in the delay and loss.
    public mutating func received(
        ssrc: UInt32, sequence: UInt16, timestamp: UInt32, clockRate: Int, size: Int, at now: Int64
    ) {
        incoming.add(arrival: now, size: size)
        if self.ssrc == nil, clockRate == Self.videoClockRate { self.ssrc = ssrc }
        guard ssrc == self.ssrc else { return }
        countLoss(sequence, at: now)
        // Unwrapped: a step that is negative as a signed 32-bit difference is reordering.
        if let last = lastTimestamp {
            let step = Int64(Int32(bitPattern: timestamp &- last))
            guard step >= 0 else { return }
            sendTime += step * 1_000_000 / Int64(Self.videoClockRate)
        }
        lastTimestamp = timestamp
        guard let deltas = groups.add(sendTime: sendTime, arrival: now) else { return }
        let usage = trendline.update(
            arrivalDelta: Double(deltas.arrival) / 1000, sendDelta: Double(deltas.send) / 1000,
            arrivalTime: Double(deltas.arrivalTime) / 1000)
        if usage == .overusing { overuseSinceUpdate = true }
        if let last = lastUpdate, now - last < Self.updateInterval { return }
        lastUpdate = now
        aimd.update(overuseSinceUpdate ? .overusing : usage, throughput: incoming.rate, at: now)
        overuseSinceUpdate = false
    }

    /// Counts the estimated stream's packets against its sequence numbers; at
    /// each window's end, high loss sets the estimate from what arrived.
    private mutating func countLoss(_ sequence: UInt16, at now: Int64) {
        let step = lastSequence.map { Int(Int16(bitPattern: sequence &- $0)) } ?? 1
        guard step > 0 else { return }  // a late or repeated packet: counted when it was expected
        lastSequence = sequence
        windowExpected += step
        windowReceived += 1
        let start = windowStart ?? now
        windowStart = start
        guard now - start >= Self.lossWindow else { return }
        loss = windowExpected > 0 ? max(0, 1 - Double(windowReceived) / Double(windowExpected)) : 0
        (windowStart, windowReceived, windowExpected) = (now, 0, 0)
        if loss > Self.highLoss, let arrived = incoming.rate {
            aimd.set(rate: min(aimd.rate, arrived * (1 - loss / 2)), at: now)
        }
    }

    /// The bitrate to send in a REMB now, if one is due: every `interval`, or
    /// at once after a drop of `dropToSendAtOnce`; nil before the incoming
    /// rate is known (the start value is a guess, not something to tell the sender).
    public mutating func rembDue(at now: Int64) -> UInt64? {
        guard ssrc != nil, incoming.rate != nil else { return nil }
        let rate = aimd.rate
        if let last = lastRemb, now - last.at < Self.interval, rate > last.rate * (1 - Self.dropToSendAtOnce) {
            return nil
        }
        lastRemb = (rate, now)
        return UInt64(rate)
    }
}
