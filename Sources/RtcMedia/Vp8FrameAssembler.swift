import RtcCodecs
import RtcRTP

/// Joins a VP8 stream's ordered packets (from a jitter buffer) into frames
/// (RFC 7741 §4.5): a frame is the packets of one RTP timestamp from the
/// start of partition 0 to the marker bit. After a loss, frames are held back
/// until the next keyframe, since later frames refer to what was lost.
public struct Vp8FrameAssembler: Sendable {
    /// A whole frame to decode, or word that a keyframe is needed.
    public enum Output: Sendable, Equatable {
        case frame(data: [UInt8], timestamp: UInt32, isKeyframe: Bool)
        /// Frames cannot be decoded until a keyframe arrives: ask the sender (PLI).
        case needKeyframe
    }

    private var packets: [RtpPacket] = []
    private var broken = false
    private var waitingForKeyframe = true
    /// Frames dropped: incomplete, or waiting for a keyframe.
    public private(set) var framesDropped = 0

    /// An assembler that waits for a keyframe first.
    public init() {}

    /// The next packet (or loss) from the jitter buffer, in order; whatever frames it completes.
    public mutating func push(_ item: JitterBuffer.Output) -> [Output] {
        switch item {
        case .lost:
            var output: [Output] = []
            if !packets.isEmpty { dropCurrent() }
            broken = true
            if !waitingForKeyframe { output.append(.needKeyframe) }
            waitingForKeyframe = true
            return output
        case .packet(let packet):
            // Padding only (a sender's probe burst, RFC 3550 §5.1): it keeps the
            // sequence whole in the jitter buffer and belongs to no frame.
            if packet.payload.isEmpty { return [] }
            var output: [Output] = []
            if let first = packets.first, first.timestamp != packet.timestamp {
                // The previous frame never saw its marker: incomplete.
                dropCurrent()
                if !waitingForKeyframe { output.append(.needKeyframe) }
                waitingForKeyframe = true
            }
            if packets.isEmpty { broken = false }
            packets.append(packet)
            guard packet.marker else { return output }
            defer {
                packets = []
                broken = false
            }
            guard !broken, let data = try? Vp8Payload.depacketize(packets.map(\.payload)) else {
                framesDropped += 1
                if !waitingForKeyframe { output.append(.needKeyframe) }
                waitingForKeyframe = true
                return output
            }
            let keyframe = Vp8Payload.startsKeyframe(packets[0].payload)
            if waitingForKeyframe, !keyframe {
                framesDropped += 1
                return output + [.needKeyframe]
            }
            waitingForKeyframe = false
            output.append(.frame(data: data, timestamp: packet.timestamp, isKeyframe: keyframe))
            return output
        }
    }

    private mutating func dropCurrent() {
        packets = []
        framesDropped += 1
    }
}
