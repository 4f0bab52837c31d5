import RtcCodecs
import RtcRTP

/// The audio receive path (pure apart from the Opus decoder): the jitter
/// buffer puts packets in order, and the RTP timestamps place them, so a gap
/// (loss, or a pause in sending) becomes concealed samples, made with the
/// next packet's FEC for the frame just before it. Audio asks for nothing
/// again: WebRTC stacks' audio sections offer no `nack` feedback, and a
/// retransmission would come too late to play.
struct AudioReceivePipeline: ReceivePipeline {
    /// Without one (a recording of packets only), packets are passed on undecoded.
    private let decoder: OpusAudioDecoder?
    private var jitter = JitterBuffer(settings: .audio)
    /// The timestamp the next packet should carry, once one has played.
    private var nextTimestamp: UInt32?
    private var counts: MediaReceiver.Stats

    /// The longest gap filled by concealment: longer is a new start, not a loss.
    static let longestGap = 48000 * 10
    /// Under 1 ms is a sender's rounding, not a gap.
    static let smallestGap = 48

    init(mid: String, decoder: OpusAudioDecoder?) {
        self.decoder = decoder
        counts = MediaReceiver.Stats(kind: "audio", mid: mid)
    }

    var stats: MediaReceiver.Stats { jitter.counted(into: counts) }
    var roundTrip: Double? {
        get { jitter.roundTrip }
        set { jitter.roundTrip = newValue }
    }
    var isWaiting: Bool { !jitter.isEmpty }
    var gapDeadline: Double? { jitter.gapDeadline }

    mutating func receive(_ packet: RtpPacket, now: Double) -> [ReceivedMedia] {
        jitter.take(packet, now: now, counting: &counts)
        return play(jitter.pop(now: now))
    }

    mutating func advance(now: Double) -> [ReceivedMedia] { play(jitter.pop(now: now)) }

    mutating func flush() -> [ReceivedMedia] { play(jitter.pop(now: .infinity)) }

    private mutating func play(_ outputs: [JitterBuffer.Output]) -> [ReceivedMedia] {
        var media: [ReceivedMedia] = []
        for case .packet(let packet) in outputs { play(packet, into: &media) }
        return media
    }

    private mutating func play(_ packet: RtpPacket, into media: inout [ReceivedMedia]) {
        guard let samples = OpusAudioDecoder.frameSamples(of: packet.payload) else { return }
        counts.framesReceived += 1
        if let expected = nextTimestamp {
            let gap = Int(Int32(bitPattern: packet.timestamp &- expected))
            if gap <= -Self.smallestGap { return }  // older than what was played
            if gap >= Self.smallestGap, gap <= Self.longestGap { conceal(gap, before: packet, into: &media) }
        } else {
            media.append(.audioStarts(timestamp: packet.timestamp))
        }
        nextTimestamp = packet.timestamp &+ UInt32(samples)
        media.append(.opus(payload: packet.payload, timestamp: packet.timestamp))
        guard let decoder else {
            counts.seconds += Double(samples) / 48000
            return
        }
        do {
            let pcm = try decoder.decode(packet.payload)
            counts.framesDecoded += 1
            media.append(.decoded(timestamp: packet.timestamp))
            emit(pcm, into: &media)
        } catch {
            counts.decodeErrors += 1  // a corrupt packet: the next one decodes, and its gap is concealed
        }
    }

    /// `gap` samples made up, 20 ms at a time; the last frame from `packet`'s FEC.
    private mutating func conceal(_ gap: Int, before packet: RtpPacket, into media: inout [ReceivedMedia]) {
        var remaining = gap
        while remaining > 0 {
            let frames = min(remaining, OpusAudioEncoder.frameSamples)
            let concealed =
                decoder?.recover(lost: frames, next: remaining <= frames ? packet.payload : nil)
                ?? [Int16](repeating: 0, count: frames * 2)
            counts.concealedFrames += 1
            emit(concealed, into: &media)
            remaining -= frames
        }
    }

    private mutating func emit(_ pcm: [Int16], into media: inout [ReceivedMedia]) {
        counts.seconds += Double(pcm.count / 2) / 48000
        media.append(.pcm(pcm))
    }
}
