/// How a probe cluster goes out as padding-only RTP packets (RFC 3550 §5.1:
/// at most 255 bytes of padding each), as libwebrtc pads: on the video's RTX
/// stream when there is one, else on the video stream; each gets its stream's
/// next sequence number, so a receiver's SRTP replay check takes it, and
/// receivers skip its empty payload. Pure: the cluster in, a schedule out.
public enum ProbeBurst {
    /// The most padding one packet carries (its last byte counts the padding).
    public static let largestPadding = 255

    /// One packet of the burst: how much padding, and when (µs after the first).
    public struct Send: Equatable, Sendable {
        /// Padding bytes, 1-255.
        public var padding: Int
        /// µs after the burst's first packet.
        public var offset: Int64
    }

    /// At least the cluster's bytes (rate × duration, counting `overhead`
    /// bytes of headers per packet) and its packets, each packet sent when
    /// the ones before it have left at the cluster's rate; at most `limit`
    /// packets.
    public static func schedule(_ cluster: ProbeCluster, overhead: Int, limit: Int = 64) -> [Send] {
        guard cluster.rate > 0 else { return [] }
        let padding = min(max(cluster.packetSize - overhead, 1), largestPadding)
        let size = padding + overhead
        let bytes = Int(cluster.rate * Double(cluster.duration) / 8_000_000)
        let count = min(max(cluster.packets, (bytes + size - 1) / size), limit)
        let spacing = Double(size * 8) * 1_000_000 / cluster.rate
        return (0..<count).map { Send(padding: padding, offset: Int64(Double($0) * spacing)) }
    }
}
