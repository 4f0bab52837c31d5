import RtcCodecs
import RtcPeer

/// Sends one source on one media section in real time: each sample leaves at
/// its media time (paced from the first one), as RTP with the negotiated
/// payload type: Opus one packet per frame (RFC 7587), VP8 split per RFC 7741
/// with the marker on a frame's last packet. Keyframe requests from the peer
/// reach the source.
public actor MediaSender {
    public struct Stats: Sendable, Equatable, Codable {
        public var kind: String
        public var mid: String
        public var packetsSent = 0
        public var bytesSent = 0
        public var framesSent = 0
        public var framesEncoded = 0
        public var keyframesSent = 0
        public var keyframeRequests = 0
        /// Media time sent, seconds.
        public var seconds = 0.0
        /// Round-trip time from the receiver's RTCP reports, seconds, if known.
        public var roundTripTime: Double?
        /// Packets the receiver reported lost (cumulative, all our streams).
        public var packetsLostByPeer: Int64 = 0
    }

    private let peer: PeerConnection
    public nonisolated let mid: String
    public nonisolated let kind: MediaKind
    private var source: any MediaSource
    private let loop: Bool
    private let duration: Double?
    private var task: Task<Void, Never>?
    private var keyframeTask: Task<Void, Never>?
    private var stats: Stats
    private var muted = false
    private let timestampBase = UInt32.random(in: 0...UInt32.max)
    private var pictureId = UInt16.random(in: 0...0x7FFF)
    private var finishWaiters: [CheckedContinuation<Void, Never>] = []
    private var finished = false
    public private(set) var lastError: String?

    /// `loop` plays the source again from the start at its end; `duration`
    /// (seconds) stops sending after that much media time.
    public init(peer: PeerConnection, mid: String, source: any MediaSource, loop: Bool = false, duration: Double? = nil)
    {
        self.peer = peer
        self.mid = mid
        self.kind = source.kind
        self.source = source
        self.loop = loop
        self.duration = duration
        stats = Stats(kind: source.kind.rawValue, mid: mid)
    }

    public func start() async {
        guard task == nil else { return }
        let events = await peer.events()
        let mid = mid
        keyframeTask = Task { [weak self] in
            for await event in events {
                if case .keyframeRequested(let requested) = event, requested == mid { await self?.keyframeRequested() }
            }
        }
        task = Task { [weak self] in await self?.run() }
    }

    public func stop() {
        task?.cancel()
        keyframeTask?.cancel()
        markFinished()
    }

    /// Waits until the source ended (or the duration passed, or stop).
    public func waitUntilFinished() async {
        if finished { return }
        await withCheckedContinuation { finishWaiters.append($0) }
    }

    public var isFinished: Bool { finished }

    /// Muted: samples are paced but not sent (the peer hears silence, sees a frozen picture).
    public func setMuted(_ muted: Bool) { self.muted = muted }

    /// Plays another source from now on (same kind); a video source starts with a keyframe.
    public func replaceSource(_ newSource: any MediaSource) throws(MediaError) {
        guard newSource.kind == kind else {
            throw .wrongKind("a \(newSource.kind.rawValue) source on a \(kind.rawValue) track")
        }
        stats.framesEncoded += source.framesEncoded
        source = newSource
        replaced = true
        newSource.requestKeyframe()
    }

    private var replaced = false

    public func currentStats() async -> Stats {
        var snapshot = stats
        snapshot.framesEncoded += source.framesEncoded
        let peerStats = await peer.stats()
        snapshot.roundTripTime = peerStats.roundTripTime
        snapshot.packetsLostByPeer = peerStats.packetsLostByPeer
        return snapshot
    }

    private func keyframeRequested() {
        stats.keyframeRequests += 1
        source.requestKeyframe()
    }

    private func run() async {
        let clock = ContinuousClock()
        let start = clock.now
        var offset = 0.0
        var previous = 0.0
        var step = kind == .audio ? 0.02 : 1.0 / 30
        var emptyAfterRewind = false
        while !Task.isCancelled {
            if replaced {
                // A new source: its times restart at zero, from where the last one stopped.
                offset += previous + step
                previous = 0
                replaced = false
            }
            let sample: EncodedSample?
            do { sample = try source.next() } catch {
                lastError = "\(error)"
                break
            }
            guard let sample else {
                guard loop, !emptyAfterRewind else { break }
                offset += previous + step
                previous = 0
                source.rewind()
                emptyAfterRewind = true
                continue
            }
            emptyAfterRewind = false
            if sample.time > previous { step = sample.time - previous }
            previous = sample.time
            let time = offset + sample.time
            if let duration, time >= duration { break }
            try? await Task.sleep(until: start + .milliseconds(Int64(time * 1000)), clock: clock)
            guard !Task.isCancelled else { break }
            if !muted { await send(sample, at: time) }
            stats.seconds = time + step
        }
        markFinished()
    }

    private func send(_ sample: EncodedSample, at time: Double) async {
        let clockRate = kind == .audio ? 48000.0 : 90000.0
        let timestamp = timestampBase &+ UInt32(truncatingIfNeeded: Int64((time * clockRate).rounded()))
        let payloads: [[UInt8]]
        switch kind {
        case .audio: payloads = [sample.data]
        case .video:
            payloads = Vp8Payload.packetize(sample.data, pictureId: pictureId)
            pictureId = (pictureId + 1) & 0x7FFF
        }
        do {
            try await peer.sendRtp(mid: mid, payloads: payloads, timestamp: timestamp, marker: kind == .video)
        } catch {
            lastError = "\(error)"
            return
        }
        stats.packetsSent += payloads.count
        stats.bytesSent += payloads.reduce(0) { $0 + $1.count }
        stats.framesSent += 1
        if sample.isKeyframe { stats.keyframesSent += 1 }
    }

    private func markFinished() {
        guard !finished else { return }
        finished = true
        let waiters = finishWaiters
        finishWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}

public enum MediaError: Error, Equatable, Sendable, CustomStringConvertible {
    case wrongKind(String)
    case recording(String)

    public var description: String {
        switch self {
        case .wrongKind(let why): "media: \(why)"
        case .recording(let why): "recording: \(why)"
        }
    }
}
