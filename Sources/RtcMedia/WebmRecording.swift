import FileSafety
import Foundation
import RtcContainers
import RtcPeer

/// A call recorded into one WebM file: every receiver of the call writes its
/// packets here as they arrive (Opus and VP8, not re-encoded), on the shared
/// `RecordingClock`, so audio and video line up from the sender reports.
/// Thread-safe: receivers call it from their own threads.
public final class WebmRecording: @unchecked Sendable {
    /// The WebM file.
    public let path: String
    /// The clock the call's tracks share.
    public let clock: RecordingClock
    private let lock = NSLock()
    private var writer: WebmWriter?
    private var failure: String?

    /// `kinds`: the tracks to expect (the header waits for video's first keyframe if video is expected).
    public init(path: String, kinds: Set<MediaKind>, clock: RecordingClock = RecordingClock()) throws {
        self.path = path
        self.clock = clock
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            // If this fails, opening the file just below fails and says why.
            PrivateFiles.makeDirectory(directory)
        }
        writer = try WebmWriter(path: path, audio: kinds.contains(.audio), video: kinds.contains(.video))
    }

    /// A packet of `kind` at `seconds` on the recording's clock.
    func write(_ kind: MediaKind, _ data: [UInt8], seconds: Double, keyframe: Bool) {
        lock.withLock {
            guard let writer else { return }
            do {
                try writer.write(
                    kind == .audio ? .audio : .video, data, milliseconds: Int64((max(seconds, 0) * 1000).rounded()),
                    keyframe: keyframe)
            } catch {
                failure = failure ?? "\(error)"
            }
        }
    }

    /// The first write that failed, if one did.
    public var error: String? { lock.withLock { failure } }

    /// Finishes the file (cues and duration); idempotent.
    public func close() {
        lock.withLock {
            writer?.close()
            writer = nil
        }
    }
}
