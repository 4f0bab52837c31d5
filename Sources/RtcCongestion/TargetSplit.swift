/// How the congestion target is shared among the tracks a connection sends:
/// audio first, video the rest, less what retransmissions take. Pure: the
/// target and the repair rate go in, each track's bitrate comes out.
public struct TargetSplit: Sendable, Equatable {
    /// Each audio track's most, bit/s (Opus is transparent well below it).
    public static let audioCap = 64_000.0
    /// Each video track's least, bit/s: VP8 at its smallest picture still moves.
    public static let videoFloor = 30_000.0
    /// The most of the video's share that repairs may take, as libwebrtc's
    /// `FecControllerDefault` caps the protection overhead it takes out of the
    /// encoder's target at 50%.
    public static let repairShareCap = 0.5

    /// Each audio track's bitrate, bit/s.
    public let audioEach: Double
    /// Each video track's bitrate, bit/s.
    public let videoEach: Double

    /// Splits `target` (bit/s) among `audioTracks` and `videoTracks`. Each
    /// audio track gets up to `audioCap` (half the target at most when video
    /// shares it); the video tracks split what is left less `repairs`, the
    /// retransmissions' rate over the last second (so media and repairs do not
    /// ask twice the link), at least `videoFloor` each.
    ///
    /// Repairs take at most half of what is left for video. After a burst of
    /// loss the NACKs can fill the whole target for a second; taking all of
    /// it out of the encoder left a 400 kbit/s call's video at the 30 kbit/s
    /// floor for two seconds, and the receiver saw no frame for 0.87 s.
    public init(target: Double, audioTracks: Int, videoTracks: Int, repairs: Double) {
        let target = max(target, 0)
        audioEach =
            audioTracks == 0 ? 0 : min(Self.audioCap, target * (videoTracks > 0 ? 0.5 : 1) / Double(audioTracks))
        guard videoTracks > 0 else {
            videoEach = 0
            return
        }
        let left = max(target - audioEach * Double(audioTracks), 0)
        let taken = min(max(repairs, 0), left * Self.repairShareCap)
        videoEach = max((left - taken) / Double(videoTracks), Self.videoFloor)
    }
}
