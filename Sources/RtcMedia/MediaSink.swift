import Dispatch
import Foundation
import RtcCodecs

/// Where a call's decoded media goes for the application: audio as 48 kHz
/// stereo PCM in 20 ms blocks, video as I420 pictures, each with the mid of
/// its section. The callbacks run on a queue of the sink's own, one at a
/// time, in order; what waits for them is bounded, and a sink slower than
/// the media drops (and counts) instead of holding the receivers back.
public final class MediaSink: @unchecked Sendable {
    private let queue = DispatchQueue(label: "carrier.media-sink")
    private let lock = NSLock()
    private let limit: Int
    private var waiting = 0
    private var droppedCount = 0
    private var deliveredCount = 0
    private let onAudio: @Sendable (AudioFrame, String) -> Void
    private let onVideo: @Sendable (VideoFrame, String) -> Void

    /// `limit`: blocks and pictures waiting for the callbacks at most (50: a second of audio).
    public init(
        limit: Int = 50, onAudio: @escaping @Sendable (AudioFrame, _ mid: String) -> Void = { _, _ in },
        onVideo: @escaping @Sendable (VideoFrame, _ mid: String) -> Void = { _, _ in }
    ) {
        self.limit = max(limit, 1)
        self.onAudio = onAudio
        self.onVideo = onVideo
    }

    /// What was dropped because the callbacks were behind, and what was delivered.
    public var dropped: Int { lock.withLock { droppedCount } }
    /// Frames handed to the callbacks.
    public var delivered: Int { lock.withLock { deliveredCount } }

    /// Returns once every callback queued so far has run (the callbacks run in
    /// order on one queue, so this waits behind them).
    public func flush() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
    }

    func deliver(audio: AudioFrame, mid: String) { enqueue { [onAudio] in onAudio(audio, mid) } }

    func deliver(video: VideoFrame, mid: String) { enqueue { [onVideo] in onVideo(video, mid) } }

    private func enqueue(_ work: @escaping @Sendable () -> Void) {
        let accepted = lock.withLock {
            guard waiting < limit else {
                droppedCount += 1
                return false
            }
            waiting += 1
            return true
        }
        guard accepted else { return }
        queue.async { [self] in
            work()
            lock.withLock {
                waiting -= 1
                deliveredCount += 1
            }
        }
    }
}
