/// The VP8 RTP payload format (RFC 7741): the payload descriptor, splitting a
/// frame into packets, and joining packets back into a frame.
public enum Vp8Payload {
    /// The fields of a payload descriptor (RFC 7741 §4.2) a receiver needs.
    public struct Descriptor: Sendable, Equatable {
        /// S: this packet starts a VP8 partition.
        public var startOfPartition: Bool
        /// PID: the partition index (0 for the first partition of a frame).
        public var partitionIndex: Int
        /// N: the frame is not used as a reference by later frames.
        public var nonReference: Bool
        /// The 7- or 15-bit picture id, if present.
        public var pictureId: Int?
        /// Bytes of descriptor before the VP8 data.
        public var length: Int

        /// The first packet of a frame.
        public var startsFrame: Bool { startOfPartition && partitionIndex == 0 }
    }

    /// Parses the descriptor at the start of a payload.
    public static func descriptor(_ payload: [UInt8]) throws(CodecError) -> Descriptor {
        guard let first = payload.first else { throw .badInput("empty VP8 payload") }
        var descriptor = Descriptor(
            startOfPartition: first & 0x10 != 0, partitionIndex: Int(first & 0x07), nonReference: first & 0x20 != 0,
            pictureId: nil, length: 1)
        guard first & 0x80 != 0 else { return descriptor }  // X: no extension
        guard payload.count > 1 else { throw .badInput("VP8 descriptor truncated") }
        let extensions = payload[1]
        var at = 2
        if extensions & 0x80 != 0 {  // I: picture id
            guard payload.count > at else { throw .badInput("VP8 picture id truncated") }
            if payload[at] & 0x80 != 0 {
                guard payload.count > at + 1 else { throw .badInput("VP8 picture id truncated") }
                descriptor.pictureId = Int(payload[at] & 0x7F) << 8 | Int(payload[at + 1])
                at += 2
            } else {
                descriptor.pictureId = Int(payload[at] & 0x7F)
                at += 1
            }
        }
        if extensions & 0x40 != 0 { at += 1 }  // L: TL0PICIDX
        if extensions & 0x30 != 0 { at += 1 }  // T or K: TID/Y/KEYIDX
        guard payload.count > at else { throw .badInput("VP8 payload has no data after its descriptor") }
        descriptor.length = at
        return descriptor
    }

    /// True if this payload starts a keyframe: the first packet of a frame whose
    /// VP8 frame tag has the P bit clear (RFC 6386 §9.1).
    public static func startsKeyframe(_ payload: [UInt8]) -> Bool {
        guard let descriptor = try? descriptor(payload), descriptor.startsFrame,
            payload.count > descriptor.length
        else { return false }
        return payload[descriptor.length] & 0x01 == 0
    }

    /// The picture size a whole VP8 keyframe declares, or nil if `frame` is
    /// not a keyframe or is cut short. RFC 6386 §9.1: after the 3-byte frame
    /// tag (P bit clear) come the start code 9d 01 2a and two little-endian
    /// 16-bit fields, width then height, whose top 2 bits are a scale hint.
    public static func keyframeSize(_ frame: [UInt8]) -> (width: Int, height: Int)? {
        guard frame.count >= 10, frame[0] & 0x01 == 0, frame[3] == 0x9D, frame[4] == 0x01, frame[5] == 0x2A
        else { return nil }
        let width = (Int(frame[6]) | Int(frame[7]) << 8) & 0x3FFF
        let height = (Int(frame[8]) | Int(frame[9]) << 8) & 0x3FFF
        return (width, height)
    }

    /// Splits one encoded frame into payloads of at most `maxPayloadSize` bytes,
    /// each with a descriptor carrying the 15-bit picture id.
    public static func packetize(_ frame: [UInt8], pictureId: UInt16, maxPayloadSize: Int = 1200) -> [[UInt8]] {
        let headerLength = 4
        let chunk = max(maxPayloadSize - headerLength, 1)
        var payloads: [[UInt8]] = []
        var offset = 0
        repeat {
            let end = min(offset + chunk, frame.count)
            var payload: [UInt8] = [
                0x80 | (offset == 0 ? 0x10 : 0x00), 0x80, 0x80 | UInt8((pictureId >> 8) & 0x7F),
                UInt8(pictureId & 0xFF),
            ]
            payload.reserveCapacity(headerLength + end - offset)
            payload.append(contentsOf: frame[offset..<end])
            payloads.append(payload)
            offset = end
        } while offset < frame.count
        return payloads
    }

    /// Joins the payloads of one frame (in sequence order) into the encoded frame.
    public static func depacketize(_ payloads: [[UInt8]]) throws(CodecError) -> [UInt8] {
        guard let first = payloads.first, try descriptor(first).startsFrame else {
            throw .badInput("VP8 frame does not start with its first partition")
        }
        var frame: [UInt8] = []
        for payload in payloads {
            let length = try descriptor(payload).length
            frame.append(contentsOf: payload[length...])
        }
        return frame
    }
}
