/// An RTP packet (RFC 3550 §5.1) with CSRCs, padding and a header extension
/// whose elements are read and written in the one-byte or two-byte form
/// (RFC 8285).
public struct RtpPacket: Equatable, Sendable {
    /// The marker bit: the last packet of a video frame.
    public var marker = false
    /// The payload type (7 bits), as the SDP maps it to a codec.
    public var payloadType: UInt8
    /// Counts packets, for order and loss.
    public var sequenceNumber: UInt16
    /// The sampling instant of the payload's first sample, on the codec's clock.
    public var timestamp: UInt32
    /// The stream's synchronization source.
    public var ssrc: UInt32
    /// Contributing sources (a mixer's inputs), rarely present.
    public var csrcs: [UInt32] = []
    /// Header extension elements by id (1-14 in the one-byte form, 1-255 in the two-byte form).
    public var extensions: [HeaderExtensionElement] = []
    /// The codec's bytes.
    public var payload: [UInt8]
    /// Padding bytes to add when written (and that were present when read).
    public var paddingLength: UInt8 = 0

    /// One header extension element (RFC 8285): id and bytes.
    public struct HeaderExtensionElement: Equatable, Sendable {
        /// The id the SDP's `a=extmap` gives the extension.
        public var id: UInt8
        /// The element's bytes.
        public var data: [UInt8]
        /// An element to write or as read.
        public init(id: UInt8, data: [UInt8]) {
            self.id = id
            self.data = data
        }
    }

    /// A packet with no CSRCs, extensions or padding.
    public init(payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32, payload: [UInt8]) {
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.payload = payload
    }

    /// The bytes of the extension element with this id, if present.
    public func extensionData(id: UInt8) -> [UInt8]? { extensions.first { $0.id == id }?.data }

    /// Reads a packet; bytes that are not one are an error that says why.
    public init(parsing bytes: [UInt8]) throws(RtpError) {
        var reader = ByteReader(bytes)
        let first = try reader.u8()
        guard first >> 6 == 2 else { throw .badVersion(first >> 6) }
        let hasPadding = first & 0x20 != 0
        let hasExtension = first & 0x10 != 0
        let csrcCount = Int(first & 0x0F)
        let second = try reader.u8()
        marker = second & 0x80 != 0
        payloadType = second & 0x7F
        sequenceNumber = try reader.u16()
        timestamp = try reader.u32()
        ssrc = try reader.u32()
        for _ in 0..<csrcCount { csrcs.append(try reader.u32()) }
        if hasExtension {
            let profile = try reader.u16()
            let words = Int(try reader.u16())
            let body = try reader.take(words * 4)
            extensions = try Self.parseExtensions(profile: profile, body: body)
        }
        var end = bytes.count
        if hasPadding {
            guard let count = bytes.last, count > 0, Int(count) <= reader.remaining else { throw .badPadding }
            paddingLength = count
            end -= Int(count)
        }
        payload = Array(bytes[reader.offset..<end])
    }

    /// The encoded packet.
    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12 + csrcs.count * 4 + payload.count + 32)
        let padding: UInt8 = paddingLength > 0 ? 0x20 : 0
        let extensionBit: UInt8 = extensions.isEmpty ? 0 : 0x10
        bytes.append(0x80 | padding | extensionBit | UInt8(min(csrcs.count, 15)))
        bytes.append((marker ? 0x80 : 0) | (payloadType & 0x7F))
        bytes.appendU16(sequenceNumber)
        bytes.appendU32(timestamp)
        bytes.appendU32(ssrc)
        for csrc in csrcs.prefix(15) { bytes.appendU32(csrc) }
        if !extensions.isEmpty { Self.writeExtensions(extensions, into: &bytes) }
        bytes += payload
        if paddingLength > 0 {
            bytes += [UInt8](repeating: 0, count: Int(paddingLength) - 1)
            bytes.append(paddingLength)
        }
        return bytes
    }

    /// RFC 8285 §4.2 (0xBEDE, one-byte) and §4.3 (0x100x, two-byte); other profiles are skipped.
    static func parseExtensions(profile: UInt16, body: [UInt8]) throws(RtpError) -> [HeaderExtensionElement] {
        var elements: [HeaderExtensionElement] = []
        var index = 0
        if profile == 0xBEDE {
            while index < body.count {
                let header = body[index]
                index += 1
                if header == 0 { continue }  // padding
                let id = header >> 4
                if id == 15 { break }  // reserved: stop processing
                let length = Int(header & 0x0F) + 1
                guard index + length <= body.count else { throw .badHeaderExtension }
                elements.append(.init(id: id, data: Array(body[index..<index + length])))
                index += length
            }
        } else if profile & 0xFFF0 == 0x1000 {
            while index < body.count {
                let id = body[index]
                index += 1
                if id == 0 { continue }
                guard index < body.count else { throw .badHeaderExtension }
                let length = Int(body[index])
                index += 1
                guard index + length <= body.count else { throw .badHeaderExtension }
                elements.append(.init(id: id, data: Array(body[index..<index + length])))
                index += length
            }
        }
        return elements
    }

    static func writeExtensions(_ elements: [HeaderExtensionElement], into bytes: inout [UInt8]) {
        let oneByte = elements.allSatisfy { (1...14).contains($0.id) && (1...16).contains($0.data.count) }
        var body: [UInt8] = []
        for element in elements {
            if oneByte {
                body.append(element.id << 4 | UInt8(element.data.count - 1))
            } else {
                body.append(element.id)
                body.append(UInt8(min(element.data.count, 255)))
            }
            body += element.data.prefix(255)
        }
        while body.count % 4 != 0 { body.append(0) }
        bytes.appendU16(oneByte ? 0xBEDE : 0x1000)
        bytes.appendU16(UInt16(body.count / 4))
        bytes += body
    }
}
