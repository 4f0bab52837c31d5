/// Decides which media section (mid) an incoming RTP packet on a BUNDLE
/// transport belongs to (RFC 8843 §9.2): by the mid header extension when
/// present (and then remembers its SSRC), else by a known SSRC (from
/// `a=ssrc` lines or learned), else by a payload type only one section uses.
public struct RtpRouter: Sendable {
    /// The extension id negotiated for `urn:ietf:params:rtp-hdrext:sdes:mid`.
    public var midExtensionId: UInt8?
    private var ssrcToMid: [UInt32: String] = [:]
    private var payloadToMid: [UInt8: String] = [:]
    private var ambiguousPayloads: Set<UInt8> = []

    /// The URI of the mid header extension (RFC 8843 §15.2).
    public static let midExtensionURI = "urn:ietf:params:rtp-hdrext:sdes:mid"

    /// A router that knows nothing yet (the mid extension id, if negotiated).
    public init(midExtensionId: UInt8? = nil) { self.midExtensionId = midExtensionId }

    /// An SSRC the SDP gives a section.
    public mutating func add(ssrc: UInt32, mid: String) { ssrcToMid[ssrc] = mid }

    /// A payload type a section uses (one two sections use routes nothing).
    public mutating func add(payloadType: UInt8, mid: String) {
        if let existing = payloadToMid[payloadType], existing != mid {
            ambiguousPayloads.insert(payloadType)
        }
        payloadToMid[payloadType] = mid
    }

    /// The section a packet belongs to, or nil if nothing says.
    public mutating func route(_ packet: RtpPacket) -> String? {
        if let id = midExtensionId, let data = packet.extensionData(id: id), !data.isEmpty {
            let mid = String(decoding: data, as: UTF8.self)
            ssrcToMid[packet.ssrc] = mid
            return mid
        }
        if let mid = ssrcToMid[packet.ssrc] { return mid }
        if !ambiguousPayloads.contains(packet.payloadType), let mid = payloadToMid[packet.payloadType] {
            ssrcToMid[packet.ssrc] = mid
            return mid
        }
        return nil
    }
}
