/// How far a video encoder's frames run over the rate it was given, as a
/// pacer at that rate would see them; the sender divides the target by it, so
/// that what the encoder puts out fits the link (libwebrtc's
/// `EncoderOvershootDetector` and `EncoderBitrateAdjuster`).
///
/// Why: libvpx holds its rate over a buffer of a second, not frame by frame.
/// After congestion control cuts the target it spends what it saved before,
/// and after a large frame it catches up only slowly; the frames above the
/// line sit in the bottleneck's queue. In the lab at a steady 400 kbit/s, the
/// second after a cut carried 300 kbit/s of video on a 220 kbit/s share.
///
/// A virtual buffer drains at the target. Each frame that finds it not empty
/// and fills it past one ideal frame (target / frame rate) counts its excess,
/// up to what was already waiting, as overshoot: a single large frame that
/// the encoder then compensates for costs nothing, a large frame with more
/// behind it does. The factor is the mean of the frames' `1 + overshoot /
/// ideal` over 3 s, between 1 and 2 (below half the target, libvpx's frame
/// dropping is the tool). Until 30 frames of an encoder are seen, it is 1:
/// libwebrtc assumes 1.2 then, but our ladder reads the start picture's
/// quantizer, and at a fifth less rate a hard picture's first second went a
/// size down instead of up to what the start probes found (a 2 Mbit/s link
/// carried 680 kbit/s on average against 940, 4 calls each).
/// Pure: time goes in as seconds; used by its encoder's one thread.
struct EncoderOvershootDetector {
    /// The window the frames' factors are averaged over, seconds.
    static let window = 3.0
    /// Frames an encoder must have made before its factor is trusted.
    static let framesToTrust = 30
    /// The most the target is divided by.
    static let largestFactor = 2.0

    private var target = 0
    private var framesPerSecond = 0.0
    private var bufferBits = 0.0
    private var lastLeak: Double?
    private var factors: [(factor: Double, time: Double)] = []
    private var framesSeen = 0

    /// The rate the encoder was given and its frame rate, from `time` on.
    mutating func setTarget(_ bitsPerSecond: Int, framesPerSecond: Double, at time: Double) {
        leak(at: time)
        target = max(bitsPerSecond, 0)
        self.framesPerSecond = framesPerSecond
    }

    /// One encoded frame of `bytes` at `time`.
    mutating func encoded(bytes: Int, at time: Double) {
        leak(at: time)
        framesSeen += 1
        guard target > 0, framesPerSecond > 0 else { return }
        let ideal = Double(target) / framesPerSecond
        let bits = Double(bytes * 8)
        let factor: Double
        if factors.isEmpty {
            // Nothing before it to compare with: the frame against the ideal size.
            factor = max(1, bits / ideal)
            bufferBits += bits
        } else {
            let overshoot = min(bufferBits, max(bits + bufferBits - ideal, 0))
            factor = 1 + overshoot / ideal
            // The excess is counted once: it leaves the buffer.
            bufferBits += bits - overshoot
        }
        factors.append((factor, time))
    }

    /// What the target is divided by at `time`: 1 to 2 (1 until 30 frames are seen).
    mutating func factor(at time: Double) -> Double {
        factors.removeAll { $0.time < time - Self.window }
        guard framesSeen >= Self.framesToTrust, !factors.isEmpty else { return 1 }
        let mean = factors.reduce(0) { $0 + $1.factor } / Double(factors.count)
        return min(max(mean, 1), Self.largestFactor)
    }

    /// The virtual pacer sends at the target since the last look.
    private mutating func leak(at time: Double) {
        if let last = lastLeak, time > last {
            bufferBits = max(bufferBits - Double(target) * (time - last), 0)
        }
        lastLeak = max(time, lastLeak ?? time)
    }
}
