import Foundation

/// The time origin every track of one recording shares, so that audio and
/// video line up: each track reports the sender's wallclock time of its first
/// frame (from RTCP sender reports; arrival time until one came), and a track
/// that starts later is offset by the difference (leading silence in WAV,
/// later timestamps in IVF).
public final class RecordingClock: @unchecked Sendable {
    private let lock = NSLock()
    private var origin: Double?

    /// A clock whose origin the first track sets.
    public init() {}

    /// Seconds from the recording's origin to `wallclock`; the first caller sets the origin.
    public func offset(of wallclock: Double) -> Double {
        lock.withLock {
            if let origin { return wallclock - origin }
            origin = wallclock
            return 0
        }
    }
}
