/// How often the peer's keyframe requests (PLI, FIR) make the encoder start
/// a keyframe (pure: time is passed in, seconds).
///
/// A keyframe costs several times a delta frame, so a receiver that asks with
/// every frame (a bug, a hostile peer, or a lossy link where each keyframe's
/// own loss draws another request) would turn the stream into keyframes that
/// overfill the link and draw still more requests. A request is honoured at
/// once if the last one granted is at least `interval` old, otherwise when it
/// is: never lost, at most one keyframe per interval. A sender holds one for
/// the requests it gets; a receiver (`VideoReceivePipeline`) holds one for
/// the requests it sends, as libwebrtc's receivers throttle theirs.
struct KeyframeRequestLimiter: Sendable {
    /// The shortest time between two keyframes made for requests.
    let interval: Double
    private var pending = false
    private var lastGranted: Double?

    init(interval: Double = 0.3) { self.interval = interval }

    /// The peer asked for a keyframe.
    mutating func request() { pending = true }

    /// A keyframe came before the request was sent: it answers it.
    mutating func satisfied() { pending = false }

    /// Whether a request waits to be granted.
    var hasPending: Bool { pending }

    /// Whether the frame encoded at `now` should be a keyframe for a request;
    /// a yes is counted as granted.
    mutating func take(now: Double) -> Bool {
        guard pending else { return false }
        if let lastGranted, now - lastGranted < interval { return false }
        pending = false
        lastGranted = now
        return true
    }
}
