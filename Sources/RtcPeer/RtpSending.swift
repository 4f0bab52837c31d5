import Foundation
import RtcRTP

/// Outgoing RTP state, callable from any thread: per media section the
/// sequence numbers and counters (RFC 3550 §5.1, for sender reports) and the
/// recent packets a NACK may ask for again (RFC 4585 §6.2.1).
///
/// A media sender paces and sends on its own thread and must not wait for
/// the peer connection's actor per frame; the actor tells this what
/// negotiation decided and reads counters for its reports. One lock.
final class RtpSending: @unchecked Sendable {
    /// What negotiation decided for one section that may send.
    struct Section: Equatable {
        var mid: String
        var ssrc: UInt32
        /// The negotiated codec's payload type and clock rate; nil: nothing agreed yet.
        var payloadType: UInt8?
        var clockRate: UInt32
        var sends: Bool
        var midExtensionId: UInt8?
        /// Retransmissions' payload type and SSRC (RFC 4588), when negotiated.
        var rtxPayloadType: UInt8? = nil
        var rtxSsrc: UInt32 = 0

        /// Video (VP8's 90 kHz clock); audio is Opus at 48 kHz.
        var isVideo: Bool { clockRate == 90000 }
        /// The mid header extension its packets carry, if negotiated.
        var midExtension: [RtpPacket.HeaderExtensionElement]? {
            midExtensionId.map { [RtpPacket.HeaderExtensionElement(id: $0, data: Array(mid.utf8))] }
        }
    }

    /// What a sender report needs about one stream we sent on.
    struct Sent: Equatable {
        var ssrc: UInt32
        var clockRate: UInt32
        var packets: UInt32
        var octets: UInt32
        var lastTimestamp: UInt32
        var lastSent: ContinuousClock.Instant
    }

    private struct Stream {
        var section: Section
        var sequence = UInt16.random(in: 0...UInt16.max)
        var packets: UInt32 = 0
        var octets: UInt32 = 0
        var lastTimestamp: UInt32 = 0
        var lastSent: ContinuousClock.Instant?
        var firstSent: ContinuousClock.Instant?
        /// The RTX stream's next sequence number, and the packets sent on it.
        var rtxSequence = UInt16.random(in: 0...UInt16.max)
        var rtxPackets: UInt32 = 0
    }

    enum Refusal: Error, Equatable {
        case noSection(String)
        case doesNotSend(String)
    }

    private let lock = NSLock()
    /// By SSRC: a section may be renamed (it takes the peer's mid), its stream goes on.
    private var streams: [UInt32: Stream] = [:]
    /// The first section's SSRC: what our RTCP feedback names as its sender.
    private var firstSsrc: UInt32?
    private var cache = RetransmissionCache()

    /// Drops every packet kept for retransmission (the connection closed: a
    /// call kept for its statistics keeps none of them).
    func releaseCache() {
        lock.withLock { cache = RetransmissionCache(capacity: cache.capacity) }
    }

    /// Sections that send, audio and video (told apart by their clock rate: Opus 48 kHz, VP8 90 kHz),
    /// and whether `mid` is one of the audio ones.
    func sendingTracks(mid: String) -> (isAudio: Bool, audio: Int, video: Int) {
        lock.withLock {
            let sending = streams.values.filter { $0.section.sends && $0.section.payloadType != nil }
            let audio = sending.filter { $0.section.clockRate == 48000 }
            return (
                audio.contains { $0.section.mid == mid }, audio.count, sending.count - audio.count
            )
        }
    }

    /// The SSRC our RTCP feedback names as its sender (the first section's), as NACK and PLI do.
    var feedbackSenderSsrc: UInt32? { lock.withLock { firstSsrc } }

    /// The sender SSRC for feedback (NACK, PLI) about a stream received on
    /// `mid`: nil if no such section is negotiated.
    func feedbackSsrc(mid: String) -> UInt32? {
        lock.withLock { streams.values.contains { $0.section.mid == mid } ? firstSsrc : nil }
    }

    /// The sections as negotiated now; counters carry over for SSRCs that stay.
    func setSections(_ sections: [Section]) {
        lock.withLock {
            var next: [UInt32: Stream] = [:]
            for section in sections {
                var stream = streams[section.ssrc] ?? Stream(section: section)
                stream.section = section
                next[section.ssrc] = stream
            }
            for ssrc in streams.keys where next[ssrc] == nil { cache.forget(ssrc: ssrc) }
            streams = next
            firstSsrc = sections.first?.ssrc
        }
    }

    /// The packets of one frame (same timestamp), numbered in order and kept for
    /// NACKs; the marker goes on the last when `marker` is set. `first` is true
    /// when these are the stream's first packets (a sender report should follow).
    func packets(mid: String, payloads: [[UInt8]], timestamp: UInt32, marker: Bool) throws(Refusal)
        -> (packets: [RtpPacket], first: Bool)
    {
        lock.lock()
        defer { lock.unlock() }
        guard let ssrc = streams.first(where: { $0.value.section.mid == mid })?.key, var stream = streams[ssrc]
        else { throw .noSection(mid) }
        guard stream.section.sends, let payloadType = stream.section.payloadType else { throw .doesNotSend(mid) }
        let first = stream.packets == 0 && !payloads.isEmpty
        let midExtension = stream.section.midExtension
        var packets: [RtpPacket] = []
        packets.reserveCapacity(payloads.count)
        for (index, payload) in payloads.enumerated() {
            var packet = RtpPacket(
                payloadType: payloadType, sequenceNumber: stream.sequence, timestamp: timestamp, ssrc: ssrc,
                payload: payload)
            packet.marker = marker && index == payloads.count - 1
            if let midExtension { packet.extensions = midExtension }
            stream.sequence &+= 1
            stream.packets &+= 1
            stream.octets &+= UInt32(truncatingIfNeeded: payload.count)
            cache.store(packet)
            packets.append(packet)
        }
        stream.lastTimestamp = timestamp
        stream.lastSent = .now
        if stream.firstSent == nil { stream.firstSent = stream.lastSent }
        streams[ssrc] = stream
        return (packets, first)
    }

    /// Since when a video stream has been sending (nil: none has yet).
    var videoSendingSince: ContinuousClock.Instant? {
        lock.withLock { streams.values.compactMap { $0.section.isVideo ? $0.firstSent : nil }.min() }
    }

    /// A padding-only packet (RFC 3550 §5.1) for a probe burst (`ProbeBurst`),
    /// beside a video stream that has sent: on its RTX stream when RTX is
    /// negotiated (as libwebrtc pads), so the media stream's numbering is
    /// untouched; else numbered next in the media stream and kept for NACKs
    /// like any other. It carries the stream's last timestamp and no payload,
    /// so receivers skip it between frames; nil when no video stream has sent yet.
    func paddingPacket(padding: Int) -> RtpPacket? {
        lock.withLock {
            guard
                let ssrc = streams.first(where: { $0.value.section.isVideo && $0.value.lastSent != nil })?.key,
                var stream = streams[ssrc], let payloadType = stream.section.payloadType, stream.section.sends
            else { return nil }
            let rtxPayloadType = stream.section.rtxPayloadType
            var packet = RtpPacket(
                payloadType: rtxPayloadType ?? payloadType,
                sequenceNumber: rtxPayloadType == nil ? stream.sequence : stream.rtxSequence,
                timestamp: stream.lastTimestamp, ssrc: rtxPayloadType == nil ? ssrc : stream.section.rtxSsrc,
                payload: [])
            packet.paddingLength = UInt8(clamping: max(padding, 1))
            if let midExtension = stream.section.midExtension { packet.extensions = midExtension }
            if rtxPayloadType == nil {
                stream.sequence &+= 1
                stream.packets &+= 1
                cache.store(packet)
            } else {
                stream.rtxSequence &+= 1
                stream.rtxPackets &+= 1
            }
            streams[ssrc] = stream
            return packet
        }
    }

    /// The packets a NACK asks for that are still kept and that `allow` lets
    /// go again (it sees each as it was first sent): on the stream's RTX
    /// stream when RTX is negotiated (RFC 4588), else as they were sent.
    func retransmissions(
        ssrc: UInt32, sequences: [UInt16], allow: (RtpPacket) -> Bool = { _ in true }
    ) -> [RtpPacket] {
        lock.withLock {
            let kept = cache.packets(ssrc: ssrc, sequences: sequences).filter(allow)
            guard var stream = streams[ssrc], let rtxPayloadType = stream.section.rtxPayloadType else { return kept }
            let wrapped = kept.map { packet in
                defer { stream.rtxSequence &+= 1 }
                return RtxPacket.wrap(
                    packet, payloadType: rtxPayloadType, ssrc: stream.section.rtxSsrc, sequence: stream.rtxSequence)
            }
            stream.rtxPackets &+= UInt32(truncatingIfNeeded: wrapped.count)
            streams[ssrc] = stream
            return wrapped
        }
    }

    /// Packets sent on RTX streams so far (retransmissions and padding), all streams.
    var rtxPacketsSent: UInt32 { lock.withLock { streams.values.reduce(0) { $0 &+ $1.rtxPackets } } }

    /// Every stream that sent something, for sender reports.
    var sent: [Sent] {
        lock.withLock {
            streams.values.compactMap { stream in
                stream.lastSent.map {
                    Sent(
                        ssrc: stream.section.ssrc, clockRate: stream.section.clockRate, packets: stream.packets,
                        octets: stream.octets, lastTimestamp: stream.lastTimestamp, lastSent: $0)
                }
            }.sorted { $0.ssrc < $1.ssrc }
        }
    }
}
