import RtcRTP
import RtcSDP

/// One negotiated media section: what it sends (SSRC, payload type, sequence)
/// and what it receives. Owned by the peer connection actor.
public struct TransceiverInfo: Sendable, Equatable {
    /// The section's mid.
    public var mid: String
    /// Audio or video.
    public var kind: MediaKind
    /// The negotiated direction (ours).
    public var direction: Direction
    /// The codec agreed for sending (nil until negotiated).
    public var codec: RtpCodec?
    /// The SSRC we send with.
    public var sendSsrc: UInt32
    /// The payload type of retransmissions on their own stream (RFC 4588),
    /// when both sides agreed on RTX for the codec; nil: NACKs are answered
    /// with the packet as it was.
    public var rtxPayloadType: UInt8?
    /// The SSRC of our retransmission stream (announced with `a=ssrc-group:FID`).
    public var rtxSsrc: UInt32 = UInt32.random(in: 1...UInt32.max)
}

struct Transceiver {
    var info: TransceiverInfo
    var midExtensionId: UInt8?
    /// The transport-wide sequence number's extension id in our descriptions
    /// (ours when we offer, the peer's when we answer), nil when not offered.
    var transportCcExtensionId: UInt8?
    let cname: String

    /// The codecs we offer: Opus and VP8 (the media layer encodes them).
    static func defaultCodecs(_ kind: MediaKind) -> [RtpCodec] {
        switch kind {
        case .audio:
            [
                RtpCodec(
                    payloadType: 111, name: "opus", clockRate: 48000, channels: 2,
                    parameters: "minptime=10;useinbandfec=1", feedback: [CongestionControl.feedbackName])
            ]
        case .video:
            [
                RtpCodec(
                    payloadType: 96, name: "VP8", clockRate: 90000,
                    feedback: ["nack", "nack pli", "ccm fir", "goog-remb", CongestionControl.feedbackName]),
                RtpCodec(payloadType: 97, name: "rtx", clockRate: 90000, parameters: "apt=96"),
            ]
        }
    }

    /// The remote codec we can use with this kind, if any (matched by name
    /// and clock rate; RTX is not a codec of its own).
    static func match(_ remote: [RtpCodec], kind: MediaKind) -> RtpCodec? {
        let ours = defaultCodecs(kind).filter { !$0.isRetransmission }
        return remote.first { candidate in
            ours.contains { $0.name.lowercased() == candidate.name.lowercased() && $0.clockRate == candidate.clockRate }
        }
    }

    /// The retransmission format (RFC 4588 §8.6) that `codecs` pair with
    /// `codec`: an `rtx` entry whose `apt` names its payload type.
    static func retransmission(for codec: RtpCodec, in codecs: [RtpCodec]) -> RtpCodec? {
        codecs.first { $0.isRetransmission && $0.parameterMap["apt"] == String(codec.payloadType) }
    }
}

extension RtpCodec {
    /// An RFC 4588 retransmission format (`rtx/90000` with `apt=`).
    var isRetransmission: Bool { name.lowercased() == "rtx" }
}
