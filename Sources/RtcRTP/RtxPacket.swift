/// RTP retransmission payload format (RFC 4588): a lost packet sent again on
/// a stream of its own, with its own SSRC and sequence numbers, so the
/// original stream's numbering and loss statistics stay its own (§4).
///
/// The RTX payload is the original sequence number (OSN, two bytes) and then
/// the original payload (§4, Figure 1); timestamp, marker, CSRCs and header
/// extensions are the original's. A packet with no payload is padding on the
/// RTX stream (bandwidth probes), and carries no OSN.
public enum RtxPacket {
    /// `original` sent again as packet `sequence` of the RTX stream `ssrc`
    /// with `payloadType` (the one paired with the original's by `apt`).
    public static func wrap(_ original: RtpPacket, payloadType: UInt8, ssrc: UInt32, sequence: UInt16) -> RtpPacket {
        var payload = [UInt8]()
        payload.reserveCapacity(original.payload.count + 2)
        payload.append(UInt8(original.sequenceNumber >> 8))
        payload.append(UInt8(original.sequenceNumber & 0xFF))
        payload.append(contentsOf: original.payload)
        var packet = RtpPacket(
            payloadType: payloadType, sequenceNumber: sequence, timestamp: original.timestamp, ssrc: ssrc,
            payload: payload)
        packet.marker = original.marker
        packet.csrcs = original.csrcs
        packet.extensions = original.extensions
        return packet
    }

    /// The original packet inside `rtx`, as the media stream `ssrc` sent it
    /// with `payloadType` (the `apt`); nil for padding (no OSN in it).
    public static func unwrap(_ rtx: RtpPacket, payloadType: UInt8, ssrc: UInt32) -> RtpPacket? {
        guard rtx.payload.count >= 2 else { return nil }
        let sequence = UInt16(rtx.payload[0]) << 8 | UInt16(rtx.payload[1])
        var packet = RtpPacket(
            payloadType: payloadType, sequenceNumber: sequence, timestamp: rtx.timestamp, ssrc: ssrc,
            payload: Array(rtx.payload.dropFirst(2)))
        packet.marker = rtx.marker
        packet.csrcs = rtx.csrcs
        packet.extensions = rtx.extensions
        return packet
    }
}
