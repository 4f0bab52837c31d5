import Foundation
import RtcCodecs
import RtcPeer

/// The thread behind a `MediaSender`: it takes samples from the source,
/// sleeps until each one's media time and sends it at once.
///
/// A thread of its own rather than a task: a task sleeping per sample woke
/// the concurrency runtime's timer thread and then a worker for every frame
/// (two thread wake-ups, each costly on a virtual machine), and sending went
/// through two actors. Here a sample costs one wake-up of this thread, and
/// `PeerConnection.sendRtp` is called directly (it is safe from any thread).
///
/// Only this thread touches the source once started; the other threads set
/// flags (stop, mute, keyframe wanted, next source) and read statistics,
/// all behind one lock.
final class MediaPacer: @unchecked Sendable {
    private let peer: PeerConnection
    private let mid: String
    private let kind: MediaKind
    private let loop: Bool
    private let duration: Double?
    private let timestampBase = UInt32.random(in: 0...UInt32.max)
    /// The source the thread starts with (it alone uses a source after that).
    private let firstSource: any MediaSource

    private let lock = NSLock()
    private var stats: MediaSender.Stats
    private var muted = false
    private var stopRequested = false
    /// The peer's keyframe requests, at most one keyframe per 0.3 s.
    private var keyframeRequests = KeyframeRequestLimiter()
    private var nextSource: (any MediaSource)?
    /// The source the thread plays now (after a replacement), for `stop`.
    private var activeSource: (any MediaSource)?
    private var finished = false
    private var finishWaiters: [CheckedContinuation<Void, Never>] = []
    private var error: String?
    private var thread: Thread?

    /// Longest single sleep: a stop is noticed within this (seconds).
    static let longestSleep = 0.1

    init(peer: PeerConnection, mid: String, source: any MediaSource, loop: Bool, duration: Double?) {
        self.peer = peer
        self.mid = mid
        self.kind = source.kind
        firstSource = source
        self.loop = loop
        self.duration = duration
        stats = MediaSender.Stats(kind: source.kind.rawValue, mid: mid)
    }

    // MARK: From other threads

    func start() {
        let thread: Thread? = lock.withLock {
            guard self.thread == nil, !finished else { return nil }
            let thread = Thread { [self] in run() }
            thread.name = "carrier-\(kind.rawValue)-sender"
            self.thread = thread
            return thread
        }
        thread?.start()
    }

    /// Stops sending; waiters are released at once, the thread ends within
    /// `longestSleep` (a live source waiting for its application is told to stop).
    func stop() {
        let sources = lock.withLock {
            stopRequested = true
            return [activeSource ?? firstSource] + (nextSource.map { [$0] } ?? [])
        }
        for source in sources { source.stop() }
        markFinished()
    }

    func waitUntilFinished() async {
        await withCheckedContinuation { waiter in
            let done = lock.withLock {
                if !finished { finishWaiters.append(waiter) }
                return finished
            }
            if done { waiter.resume() }
        }
    }

    var isFinished: Bool { lock.withLock { finished } }
    var lastError: String? { lock.withLock { error } }
    var currentStats: MediaSender.Stats { lock.withLock { stats } }

    func setMuted(_ muted: Bool) { lock.withLock { self.muted = muted } }

    func keyframeRequested() {
        lock.withLock {
            stats.keyframeRequests += 1
            keyframeRequests.request()
        }
    }

    /// Plays `newSource` from the next sample on; it starts with a keyframe.
    func replace(with newSource: any MediaSource) {
        lock.withLock { nextSource = newSource }
    }

    // MARK: The pacing thread

    private func run() {
        let start = Self.now()
        var offset = 0.0
        var previous = 0.0
        var step = kind == .audio ? 0.02 : 1.0 / 30
        var emptyAfterRewind = false
        var encodedBefore = 0
        var source = firstSource
        while true {
            let (stop, replacement, keyframe) = lock.withLock {
                defer { nextSource = nil }
                return (stopRequested, nextSource, keyframeRequests.take(now: Self.now()))
            }
            if stop { break }
            if let replacement {
                // A new source: its times restart at zero, from where the last one stopped.
                encodedBefore += source.framesEncoded
                source = replacement
                lock.withLock { activeSource = replacement }
                offset += previous + step
                previous = 0
                replacement.requestKeyframe()
                appliedShare = nil  // the new source's encoder starts from its own rate
            }
            if keyframe { source.requestKeyframe() }
            adaptBitrate(source)
            let sample: EncodedSample?
            do { sample = try source.next() } catch {
                lock.withLock { self.error = "\(error)" }
                break
            }
            let encoded = encodedBefore + source.framesEncoded
            let size = source.encodedSize
            lock.withLock {
                stats.framesEncoded = encoded
                stats.encodedWidth = size?.width
                stats.encodedHeight = size?.height
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
            guard sleep(until: start + time) else { break }
            if !lock.withLock({ muted }) { send(sample, at: time, due: start + time) }
            lock.withLock { stats.seconds = time + step }
        }
        markFinished()
        // The thread's closure holds this pacer and the pacer held the thread: let
        // go, or every pacer, with its source (an open file), outlived its call.
        lock.withLock { thread = nil }
    }

    /// Sleeps until `deadline` (monotonic seconds); false if a stop came meanwhile.
    private func sleep(until deadline: Double) -> Bool {
        while true {
            if lock.withLock({ stopRequested }) { return false }
            let now = Self.now()
            if now >= deadline { return true }
            var wake = Self.instant(min(deadline, now + Self.longestSleep))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil) == EINTR {}
        }
    }

    /// Sends a sample whose media time is `time`, due on the monotonic clock at `due`.
    private func send(_ sample: EncodedSample, at time: Double, due: Double) {
        let clockRate = kind == .audio ? 48000.0 : 90000.0
        let timestamp = timestampBase &+ UInt32(truncatingIfNeeded: Int64((time * clockRate).rounded()))
        let payloads: [[UInt8]]
        switch kind {
        case .audio: payloads = [sample.data]
        case .video:
            payloads = Vp8Payload.packetize(sample.data, pictureId: pictureId)
            pictureId = (pictureId + 1) & 0x7FFF
        }
        // Each packet's wait, from the frame's due time to the socket.
        var waited = 0.0
        var lastWait = 0.0
        do {
            if let share = appliedShare, payloads.count > 1 {
                // Paced at 2.5 times the share (libwebrtc's pacing factor): a keyframe of twenty
                // packets leaves over a frame or two instead of as one burst into a slow link's queue.
                let pacingRate = Double(max(share, 30_000)) * 2.5
                var next = Self.now()
                for (index, payload) in payloads.enumerated() {
                    if index > 0 { guard sleep(until: next) else { return } }
                    try peer.sendRtp(
                        mid: mid, payloads: [payload], timestamp: timestamp,
                        marker: kind == .video && index == payloads.count - 1)
                    lastWait = max(Self.now() - due, 0)
                    waited += lastWait
                    next += Double((payload.count + 40) * 8) / pacingRate
                }
            } else {
                try peer.sendRtp(mid: mid, payloads: payloads, timestamp: timestamp, marker: kind == .video)
                lastWait = max(Self.now() - due, 0)
                waited = lastWait * Double(payloads.count)
            }
        } catch {
            lock.withLock {
                self.error = "\(error)"
                // The connection is gone: nothing more can be sent (a looping source would encode forever).
                if error == .closed { stopRequested = true }
            }
            return
        }
        lock.withLock {
            stats.packetsSent += payloads.count
            stats.bytesSent += payloads.reduce(0) { $0 + $1.count }
            stats.framesSent += 1
            stats.totalPacketSendDelay += waited
            stats.lastPacketSendDelay = lastWait
            if sample.isKeyframe { stats.keyframesSent += 1 }
        }
    }

    /// When the share was last looked at, and what was applied (the pacing thread's only).
    private var lastShareCheck = 0.0
    private var appliedShare: Int?

    /// Every quarter second: congestion control's share for this track goes to
    /// the source's encoder when it moved by more than 5%.
    private func adaptBitrate(_ source: any MediaSource) {
        let now = Self.now()
        guard now - lastShareCheck >= 0.25 else { return }
        lastShareCheck = now
        guard let share = peer.bitrateShare(mid: mid) else { return }
        if let applied = appliedShare, abs(Double(share.bitrate - applied)) < 0.05 * Double(applied) { return }
        let follows = source.setTargetBitrate(share.bitrate, loss: share.loss)
        appliedShare = share.bitrate
        lock.withLock {
            stats.targetBitrate = share.bitrate
            stats.followsTarget = follows
        }
    }

    /// VP8 picture id of the next frame (RFC 7741 §4.2); the pacing thread's only.
    private var pictureId = UInt16.random(in: 0...0x7FFF)

    private func markFinished() {
        let waiters: [CheckedContinuation<Void, Never>] = lock.withLock {
            guard !finished else { return [] }
            finished = true
            defer { finishWaiters = [] }
            return finishWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private static func now() -> Double {
        var time = Glibc.timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    private static func instant(_ seconds: Double) -> Glibc.timespec {
        let whole = seconds.rounded(.down)
        return Glibc.timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
    }
}
