/// Cuts a TURN-over-TCP byte stream into its frames (RFC 8656 §12.5): STUN
/// messages, and ChannelData padded to a multiple of 4 bytes. A stream that
/// is neither is passed on as it is, unread, from then on.
struct TurnFrameReader {
    private var buffer: [UInt8] = []
    private var start = 0
    /// False once the stream held something that is no frame.
    private(set) var framed = true

    /// Bytes held at most while a frame is incomplete: a STUN message or
    /// ChannelData is at most 4 + 65,535 bytes, padded.
    static let maxFrame = 4 + 65_536

    /// Adds what was read; returns the whole frames now available (and,
    /// once unframed, everything as one chunk).
    mutating func read(_ bytes: ArraySlice<UInt8>) -> [[UInt8]] {
        buffer += bytes
        var frames: [[UInt8]] = []
        while framed, let length = TurnMessage.frameLength(buffer[start...]) {
            guard length > 0, length <= Self.maxFrame else {
                framed = false
                break
            }
            guard buffer.count - start >= length else { break }
            frames.append(Array(buffer[start..<start + length]))
            start += length
        }
        if !framed, start < buffer.count {
            frames.append(Array(buffer[start...]))
            start = buffer.count
        }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return frames
    }

    /// A ChannelData frame from a datagram as TCP carries it: padded to 4 bytes.
    static func padded(_ datagram: [UInt8]) -> [UInt8] {
        guard datagram.first.map({ $0 >> 6 == 1 }) == true, datagram.count % 4 != 0 else { return datagram }
        return datagram + [UInt8](repeating: 0, count: 4 - datagram.count % 4)
    }

    /// A frame as a datagram: ChannelData without its padding (its length field says how much is data).
    static func unpadded(_ frame: [UInt8]) -> [UInt8] {
        guard frame.count >= 4, frame[0] >> 6 == 1 else { return frame }
        let length = Int(frame[2]) << 8 | Int(frame[3])
        return Array(frame.prefix(4 + length))
    }
}
