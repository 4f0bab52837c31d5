import COpus
import CShimOpus

/// Opus encoder (libopus) at 48 kHz, mono or stereo, 20 ms frames by default.
/// Not thread-safe: one owner encodes at a time.
public final class OpusAudioEncoder: @unchecked Sendable {
    /// How the encoder encodes (channels, bitrate, FEC, DTX, complexity).
    public struct Settings: Sendable, Equatable {
        /// 1 or 2.
        public var channels: Int
        /// Target bits per second (64 kb/s by default).
        public var bitrate: Int
        /// In-band forward error correction (RFC 6716 §2.1.7): a low-bitrate copy
        /// of the previous frame that a receiver can use when one packet is lost.
        public var inbandFec: Bool
        /// Discontinuous transmission: near-silent frames become 1-2 byte packets.
        public var dtx: Bool
        /// The loss the encoder plans FEC for, percent.
        public var expectedLossPercent: Int
        /// 0-10: CPU spent per frame for quality. 9, as libwebrtc uses on desktops
        /// (libopus defaults to 10, for little audible gain at these bitrates).
        public var complexity: Int = 9

        /// Stereo at 64 kb/s with in-band FEC for 5% loss, no DTX, unless told otherwise.
        public init(
            channels: Int = 2, bitrate: Int = 64_000, inbandFec: Bool = true, dtx: Bool = false,
            expectedLossPercent: Int = 5
        ) {
            self.channels = channels
            self.bitrate = bitrate
            self.inbandFec = inbandFec
            self.dtx = dtx
            self.expectedLossPercent = expectedLossPercent
        }
    }

    /// Opus in WebRTC runs at 48 kHz (RFC 7587).
    public static let sampleRate = 48000
    /// 20 ms at 48 kHz.
    public static let frameSamples = 960

    /// The settings it was made with.
    public let settings: Settings
    private let encoder: OpaquePointer
    private var output = [UInt8](repeating: 0, count: 4000)

    /// An encoder for 20 ms frames with these settings.
    public init(_ settings: Settings = Settings()) throws(CodecError) {
        guard settings.channels == 1 || settings.channels == 2 else {
            throw .badSettings("Opus takes 1 or 2 channels, not \(settings.channels)")
        }
        var error: Int32 = 0
        guard let encoder = opus_encoder_create(48000, Int32(settings.channels), OPUS_APPLICATION_AUDIO, &error),
            error == OPUS_OK
        else { throw .library("opus_encoder_create: \(Self.describe(error))") }
        self.encoder = encoder
        self.settings = settings
        bitrate = settings.bitrate
        cshim_opus_set_bitrate(encoder, Int32(settings.bitrate))
        cshim_opus_set_inband_fec(encoder, settings.inbandFec)
        cshim_opus_set_packet_loss_perc(encoder, Int32(settings.expectedLossPercent))
        cshim_opus_set_dtx(encoder, settings.dtx)
        cshim_opus_set_complexity(encoder, Int32(min(max(settings.complexity, 0), 10)))
    }

    deinit { opus_encoder_destroy(encoder) }

    /// The bitrate it aims at now (the settings' until `setBitrate`).
    public private(set) var bitrate: Int

    /// Aims at another bitrate from the next frame on (6-510 kbit/s, Opus's range).
    public func setBitrate(_ bitsPerSecond: Int) {
        let clamped = min(max(bitsPerSecond, 6000), 510_000)
        guard clamped != bitrate else { return }
        cshim_opus_set_bitrate(encoder, Int32(clamped))
        bitrate = clamped
    }

    /// The loss the receiver reports, so in-band FEC spends what the path loses (0-100).
    public func setExpectedLoss(percent: Int) {
        cshim_opus_set_packet_loss_perc(encoder, Int32(min(max(percent, 0), 100)))
    }

    /// Encodes one frame (2.5 to 60 ms of 48 kHz samples, interleaved) into one packet.
    public func encode(_ samples: [Int16]) throws(CodecError) -> [UInt8] {
        let frames = samples.count / settings.channels
        guard frames > 0 else { throw .badInput("no samples to encode") }
        let length = samples.withUnsafeBufferPointer { pcm -> Int32 in
            output.withUnsafeMutableBufferPointer { out -> Int32 in
                guard let input = pcm.baseAddress, let target = out.baseAddress else { return OPUS_BAD_ARG }
                return opus_encode(encoder, input, Int32(frames), target, Int32(out.count))
            }
        }
        guard length > 0 else { throw .library("opus_encode: \(Self.describe(length))") }
        return Array(output[0..<Int(length)])
    }

    static func describe(_ code: Int32) -> String {
        opus_strerror(code).map { String(cString: $0) } ?? "error \(code)"
    }
}

/// Why a codec could not be made or could not take its input.
public enum CodecError: Error, Equatable, Sendable, CustomStringConvertible {
    case badSettings(String)
    case library(String)
    case badInput(String)

    /// What went wrong, in words for a log or a user.
    public var description: String {
        switch self {
        case .badSettings(let why): "codec settings: \(why)"
        case .library(let why): "codec: \(why)"
        case .badInput(let why): "codec input: \(why)"
        }
    }
}
