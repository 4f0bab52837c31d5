import RtcCodecs
import RtcRTP

/// The video receive path (pure apart from the VP8 decoder): the jitter
/// buffer puts packets in order and says which are missing (NACK), the
/// assembler joins them into frames, and a frame that cannot be completed or
/// decoded makes it ask for a keyframe (PLI), at most every 0.3 s
/// (`KeyframeRequestLimiter`) since each keyframe costs the link several
/// frames. Freezes are counted as WebRTC's statistics define them.
struct VideoReceivePipeline: ReceivePipeline {
    /// Without one (a recording of frames only), frames are passed on undecoded.
    private let decoder: Vp8VideoDecoder?
    private var jitter = JitterBuffer(settings: .video)
    private var assembler = Vp8FrameAssembler()
    private var keyframes = KeyframeRequestLimiter()
    private var ssrc: UInt32?
    private var firstTimestamp: UInt32?
    private var lastFrameAt: Double?
    private var meanFrameInterval: Double?
    private var counts: MediaReceiver.Stats

    init(mid: String, decoder: Vp8VideoDecoder?) {
        self.decoder = decoder
        counts = MediaReceiver.Stats(kind: "video", mid: mid)
    }

    var stats: MediaReceiver.Stats {
        var stats = jitter.counted(into: counts)
        stats.framesDropped = assembler.framesDropped
        return stats
    }
    var roundTrip: Double? {
        get { jitter.roundTrip }
        set { jitter.roundTrip = newValue }
    }
    var isWaiting: Bool { !jitter.isEmpty || keyframes.hasPending }
    var gapDeadline: Double? { jitter.gapDeadline }

    mutating func receive(_ packet: RtpPacket, now: Double) -> [ReceivedMedia] {
        ssrc = packet.ssrc
        jitter.take(packet, now: now, counting: &counts)
        // A keyframe's first packet behind a gap: the frames before it no longer matter.
        // Its frame will not be asked for: it is coming.
        if Vp8Payload.startsKeyframe(packet.payload) {
            _ = show(jitter.skipGaps(before: packet.sequenceNumber), now: now, asking: false)
        }
        var media = show(jitter.pop(now: now), now: now)
        // A gap or a frame that cannot be completed: ask now, not at the next tick.
        if isWaiting { media += feedback(now: now) }
        return media
    }

    mutating func advance(now: Double) -> [ReceivedMedia] {
        show(jitter.pop(now: now), now: now) + feedback(now: now)
    }

    mutating func flush() -> [ReceivedMedia] { show(jitter.pop(now: .infinity), now: nil) }

    /// Missing packets to ask for, and a keyframe if one is wanted and the last request is old enough.
    private mutating func feedback(now: Double) -> [ReceivedMedia] {
        guard let ssrc else { return [] }
        let nacks = jitter.nacks(now: now)
        if !nacks.isEmpty { counts.nacksSent += 1 }
        let keyframe = keyframes.take(now: now)
        if keyframe { counts.plisSent += 1 }
        return nacks.isEmpty && !keyframe ? [] : [.feedback(ssrc: ssrc, nacks: nacks, keyframe: keyframe)]
    }

    /// `asking`: whether a frame that cannot be decoded asks for a keyframe.
    private mutating func show(_ outputs: [JitterBuffer.Output], now: Double?, asking: Bool = true) -> [ReceivedMedia] {
        var media: [ReceivedMedia] = []
        for output in outputs {
            for item in assembler.push(output) {
                switch item {
                case .frame(let data, let timestamp, let keyframe):
                    show(data, timestamp: timestamp, keyframe: keyframe, now: now, into: &media)
                case .needKeyframe: if asking { keyframes.request() }
                }
            }
        }
        return media
    }

    private mutating func show(
        _ data: [UInt8], timestamp: UInt32, keyframe: Bool, now: Double?, into media: inout [ReceivedMedia]
    ) {
        counts.framesReceived += 1
        if keyframe { counts.keyframesReceived += 1 }
        let first = firstTimestamp ?? timestamp
        firstTimestamp = first
        let mediaSeconds = Double(Int32(bitPattern: timestamp &- first)) / 90000
        counts.seconds = max(counts.seconds, mediaSeconds)
        media.append(.vp8(data: data, timestamp: timestamp, keyframe: keyframe, mediaSeconds: mediaSeconds))
        guard let decoder else { return }
        let picture: VideoFrame?
        do { picture = try decoder.decode(data) } catch { picture = nil }
        guard let picture else {
            counts.decodeErrors += 1  // refused, or no picture: later frames need a keyframe
            keyframes.request()
            return
        }
        if keyframe { keyframes.satisfied() }  // a request not sent yet is answered
        counts.framesDecoded += 1
        counts.width = picture.width
        counts.height = picture.height
        if let now { noteFrameTiming(now) }
        media.append(.decoded(timestamp: timestamp))
        media.append(.picture(picture, timestamp: timestamp))
    }

    /// Freeze detection as WebRTC's statistics define it: a pause between
    /// decoded frames longer than max(3 × the mean interval, mean + 150 ms).
    private mutating func noteFrameTiming(_ now: Double) {
        defer { lastFrameAt = now }
        guard let last = lastFrameAt else { return }
        let interval = now - last
        if let mean = meanFrameInterval, interval > max(3 * mean, mean + 0.15) { counts.freezes += 1 }
        counts.longestFrameGap = max(counts.longestFrameGap ?? 0, interval)
        meanFrameInterval = meanFrameInterval.map { $0 * 0.9 + interval * 0.1 } ?? interval
    }
}
