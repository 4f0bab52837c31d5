import COpus

/// Opus decoder (libopus) at 48 kHz with packet-loss concealment and FEC recovery.
/// Not thread-safe: one owner decodes at a time.
public final class OpusAudioDecoder: @unchecked Sendable {
    /// Channels it decodes to (1 or 2), whatever the packets carry.
    public let channels: Int
    private let decoder: OpaquePointer
    /// Up to 120 ms per packet (RFC 6716 §3.2.5).
    private var pcm: [Int16]
    private var lastFrameSamples = OpusAudioEncoder.frameSamples

    /// A 48 kHz decoder to 1 or 2 channels.
    public init(channels: Int = 2) throws(CodecError) {
        guard channels == 1 || channels == 2 else { throw .badSettings("Opus decodes to 1 or 2 channels") }
        var error: Int32 = 0
        guard let decoder = opus_decoder_create(48000, Int32(channels), &error), error == OPUS_OK else {
            throw .library("opus_decoder_create: \(OpusAudioEncoder.describe(error))")
        }
        self.decoder = decoder
        self.channels = channels
        pcm = [Int16](repeating: 0, count: 5760 * channels)
    }

    deinit { opus_decoder_destroy(decoder) }

    /// Decodes one packet into interleaved 48 kHz samples.
    public func decode(_ packet: [UInt8]) throws(CodecError) -> [Int16] {
        guard !packet.isEmpty else { throw .badInput("empty Opus packet") }
        let frames = run(packet, fec: false, frames: 5760)
        guard frames > 0 else { throw .badInput("undecodable Opus packet: \(OpusAudioEncoder.describe(frames))") }
        lastFrameSamples = Int(frames)
        return Array(pcm[0..<Int(frames) * channels])
    }

    /// Samples for a lost packet: recovered from the next packet's in-band FEC
    /// when it carries some, otherwise concealed (libopus PLC).
    public func recover(lost frameSamples: Int? = nil, next: [UInt8]? = nil) -> [Int16] {
        let frames = frameSamples ?? lastFrameSamples
        var decoded: Int32 = 0
        if let next, !next.isEmpty { decoded = run(next, fec: true, frames: frames) }
        if decoded <= 0 { decoded = run(nil, fec: false, frames: frames) }
        guard decoded > 0 else { return [Int16](repeating: 0, count: frames * channels) }
        return Array(pcm[0..<Int(decoded) * channels])
    }

    /// Samples per channel in a packet, from its TOC byte (RFC 6716 §3.1), or nil if malformed.
    public static func frameSamples(of packet: [UInt8]) -> Int? {
        guard !packet.isEmpty else { return nil }
        let count = packet.withUnsafeBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return OPUS_BAD_ARG }
            return opus_packet_get_nb_samples(base, Int32(buffer.count), 48000)
        }
        return count > 0 ? Int(count) : nil
    }

    private func run(_ packet: [UInt8]?, fec: Bool, frames: Int) -> Int32 {
        let limit = min(frames, 5760)
        return pcm.withUnsafeMutableBufferPointer { out -> Int32 in
            guard let target = out.baseAddress else { return OPUS_BAD_ARG }
            if let packet {
                return packet.withUnsafeBufferPointer {
                    opus_decode(decoder, $0.baseAddress, Int32($0.count), target, Int32(limit), fec ? 1 : 0)
                }
            }
            return opus_decode(decoder, nil, 0, target, Int32(limit), 0)
        }
    }
}
