/// How the congestion target is shared among the tracks a connection sends:
/// audio first, video the rest, less what retransmissions and the packets'
/// own headers take. Pure: the target and the repair rate go in, each
/// track's encoder bitrate comes out.
public struct TargetSplit: Sendable, Equatable {
    /// Each audio track's most, bit/s (Opus is transparent well below it).
    public static let audioCap = 64_000.0
    /// Each video track's least, bit/s: VP8 at its smallest picture still moves.
    public static let videoFloor = 30_000.0
    /// Each audio track's least, bit/s: Opus's lowest rate.
    public static let audioFloor = 6_000.0
    /// The most of the video's share that repairs may take, as libwebrtc's
    /// `FecControllerDefault` caps the protection overhead it takes out of the
    /// encoder's target at 50%.
    public static let repairShareCap = 0.5
    /// Audio packets a second (Opus in 20 ms frames).
    public static let audioPacketsPerSecond = 50.0
    /// Video frames a second the headers are reckoned for. The ladder may
    /// send fewer; 30 errs on the safe side.
    public static let videoFramesPerSecond = 30.0
    /// Video payload bytes a packet carries when a frame takes several
    /// (`Vp8Payload.packetize`'s limit).
    public static let videoPayloadPerPacket = 1_200.0

    /// Video packets a second at `media` bit/s: a frame's bytes fill whole
    /// packets and half a packet more on average, and each frame is a packet
    /// at least (a 400 kbit/s call's 240 kbit/s of 320x240 went in 37.5
    /// packets a second; this says 40).
    public static func videoPacketsPerSecond(media: Double) -> Double {
        max(videoFramesPerSecond, videoFramesPerSecond / 2 + media / (8 * videoPayloadPerPacket))
    }

    /// Each audio track's bitrate, bit/s.
    public let audioEach: Double
    /// Each video track's bitrate, bit/s.
    public let videoEach: Double

    /// Splits `target` (bit/s on the link) among `audioTracks` and
    /// `videoTracks`. Each audio track gets up to `audioCap` (half the target
    /// at most when video shares it); the video tracks split what is left
    /// less `repairs`, the retransmissions' rate over the last second (so
    /// media and repairs do not ask twice the link), at least `videoFloor` each.
    ///
    /// `packetOverhead` is what each packet carries besides its payload on
    /// the link (RTP header and extensions, the SRTP tag, UDP and IP), bytes.
    /// It comes out of each track's share before its encoder's, as libwebrtc
    /// takes the transport overhead out of its encoders' targets: given the
    /// whole target, a 400 kbit/s call's encoders sent 9-11% above it (about
    /// 60 bytes on 80 packets a second), overuse fired every few seconds and
    /// the queue at the bottleneck stood at 120 ms.
    ///
    /// Repairs take at most half of what is left for video. After a burst of
    /// loss the NACKs can fill the whole target for a second; taking all of
    /// it out of the encoder left a 400 kbit/s call's video at the 30 kbit/s
    /// floor for two seconds, and the receiver saw no frame for 0.87 s.
    public init(target: Double, audioTracks: Int, videoTracks: Int, repairs: Double, packetOverhead: Double = 0) {
        let target = max(target, 0)
        let overheadBits = max(packetOverhead, 0) * 8
        let audioHeaders = Self.audioPacketsPerSecond * overheadBits
        let audioLink =
            audioTracks == 0
            ? 0 : min(Self.audioCap + audioHeaders, target * (videoTracks > 0 ? 0.5 : 1) / Double(audioTracks))
        audioEach = audioTracks == 0 ? 0 : min(audioLink, max(audioLink - audioHeaders, Self.audioFloor))
        guard videoTracks > 0 else {
            videoEach = 0
            return
        }
        let left = max(target - audioLink * Double(audioTracks), 0)
        let taken = min(max(repairs, 0), left * Self.repairShareCap)
        // link = media + videoPacketsPerSecond(media) · overhead, solved for media.
        let link = (left - taken) / Double(videoTracks)
        let several =
            (link - Self.videoFramesPerSecond / 2 * overheadBits)
            / (1 + overheadBits / (8 * Self.videoPayloadPerPacket))
        let media =
            several / (8 * Self.videoPayloadPerPacket) >= Self.videoFramesPerSecond / 2
            ? several : link - Self.videoFramesPerSecond * overheadBits
        videoEach = max(media, Self.videoFloor)
    }
}
