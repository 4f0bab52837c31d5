import RtcCodecs
import RtcPeer

/// Sends one source on one media section in real time: each sample leaves at
/// its media time (paced from the first one), as RTP with the negotiated
/// payload type: Opus one packet per frame (RFC 7587), VP8 split per RFC 7741
/// with the marker on a frame's last packet. Keyframe requests from the peer
/// reach the source. The pacing and sending run on a thread of the sender's
/// own (`MediaPacer`); this actor is the handle to it.
public actor MediaSender {
    /// What the sender has encoded and sent.
    public struct Stats: Sendable, Equatable, Codable {
        /// `audio` or `video`.
        public var kind: String
        /// The media section.
        public var mid: String
        /// RTP packets sent.
        public var packetsSent = 0
        /// Payload bytes sent.
        public var bytesSent = 0
        /// Frames sent.
        public var framesSent = 0
        /// Frames encoded here (0 for pass-through sources).
        public var framesEncoded = 0
        /// The picture size the last video frame was encoded at (nil for audio
        /// and pass-through): below the source's when the link is too slow for it.
        public var encodedWidth: Int?
        /// See `encodedWidth`.
        public var encodedHeight: Int?
        /// Keyframes sent (video).
        public var keyframesSent = 0
        /// Keyframe requests the peer sent.
        public var keyframeRequests = 0
        /// Media time sent, seconds.
        public var seconds = 0.0
        /// Round-trip time from the receiver's RTCP reports, seconds, if known.
        public var roundTripTime: Double?
        /// Packets the receiver reported lost (cumulative, all our streams).
        public var packetsLostByPeer: Int64 = 0
        /// Congestion control's share for this track, bit/s, when the peer gives feedback.
        public var targetBitrate: Int?
        /// Whether the encoder follows that share: false for a track passed through
        /// as the file holds it (its rate cannot change), nil before any share came.
        public var followsTarget: Bool?
        /// Seconds the packets sent waited here, each from its frame's media
        /// time to the socket, summed (W3C's `totalPacketSendDelay`): the pacer
        /// spreading a large frame, and frames that went late behind one.
        public var totalPacketSendDelay = 0.0
        /// How long the last frame's last packet waited, seconds: the pacer's queue then.
        public var lastPacketSendDelay = 0.0
    }

    private let peer: PeerConnection
    /// The media section it sends on.
    public nonisolated let mid: String
    /// Its source's kind.
    public nonisolated let kind: MediaKind
    private let pacer: MediaPacer
    private var keyframeTask: Task<Void, Never>?
    private var started = false

    /// `loop` plays the source again from the start at its end; `duration`
    /// (seconds) stops sending after that much media time.
    public init(peer: PeerConnection, mid: String, source: any MediaSource, loop: Bool = false, duration: Double? = nil)
    {
        self.peer = peer
        self.mid = mid
        self.kind = source.kind
        pacer = MediaPacer(peer: peer, mid: mid, source: source, loop: loop, duration: duration)
    }

    /// Starts the sending thread; keyframe requests from the peer reach the source.
    public func start() async {
        guard !started else { return }
        started = true
        let events = await peer.events()
        let (mid, pacer) = (mid, pacer)
        keyframeTask = Task {
            for await event in events {
                if case .keyframeRequested(let requested) = event, requested == mid { pacer.keyframeRequested() }
            }
        }
        pacer.start()
    }

    /// Stops sending; the thread ends within 0.1 s.
    public func stop() {
        keyframeTask?.cancel()
        pacer.stop()
    }

    /// Waits until the source ended (or the duration passed, or stop).
    public func waitUntilFinished() async { await pacer.waitUntilFinished() }

    /// Whether it stopped (end of the source, duration, stop, or an error).
    public var isFinished: Bool { pacer.isFinished }

    /// Why sending stopped early, if it did (an unreadable source, a refused send).
    public var lastError: String? { pacer.lastError }

    /// Muted: samples are paced but not sent (the peer hears silence, sees a frozen picture).
    public func setMuted(_ muted: Bool) { pacer.setMuted(muted) }

    /// Plays another source from now on (same kind); a video source starts with a keyframe.
    public func replaceSource(_ newSource: any MediaSource) throws(MediaError) {
        guard newSource.kind == kind else {
            throw .wrongKind("a \(newSource.kind.rawValue) source on a \(kind.rawValue) track")
        }
        pacer.replace(with: newSource)
    }

    /// A snapshot of the statistics, with the peer's view of loss and RTT.
    public func currentStats() async -> Stats {
        var snapshot = pacer.currentStats
        let peerStats = await peer.stats()
        snapshot.roundTripTime = peerStats.roundTripTime
        snapshot.packetsLostByPeer = peerStats.packetsLostByPeer
        return snapshot
    }
}

/// Why a sender refused a change.
public enum MediaError: Error, Equatable, Sendable, CustomStringConvertible {
    case wrongKind(String)
    case recording(String)

    /// What went wrong, in words for a log or a user.
    public var description: String {
        switch self {
        case .wrongKind(let why): "media: \(why)"
        case .recording(let why): "recording: \(why)"
        }
    }
}
