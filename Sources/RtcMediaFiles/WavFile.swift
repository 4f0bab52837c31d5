import Foundation
import RtcCodecs

/// A RIFF/WAVE file of 16-bit PCM, read whole (test and sample files are small).
public struct WavFile: Sendable {
    /// The samples, interleaved, with their channels and rate.
    public let audio: AudioFrame

    /// Reads the whole file; anything but 16-bit PCM is a clear error.
    public init(path: String) throws(MediaFileError) {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) else {
            throw .cannotOpen(path)
        }
        var reader = LittleEndianReader(data)
        guard reader.ascii(4) == "RIFF", reader.u32() != nil, reader.ascii(4) == "WAVE" else {
            throw .malformed(path: path, why: "no RIFF/WAVE header")
        }
        var format: (channels: Int, rate: Int, bits: Int)?
        while reader.remaining >= 8 {
            guard let id = reader.ascii(4), let size = reader.u32().map(Int.init) else { break }
            if id == "fmt " {
                var fmt = reader
                guard size >= 16, let tag = fmt.u16(), let channels = fmt.u16(), let rate = fmt.u32(),
                    fmt.u32() != nil, fmt.u16() != nil, let bits = fmt.u16()
                else { throw .malformed(path: path, why: "short fmt chunk") }
                // 1 = PCM; 0xFFFE = WAVE_FORMAT_EXTENSIBLE (sox and ffmpeg write it for >2 channels).
                guard tag == 1 || tag == 0xFFFE else {
                    throw .unsupported(path: path, why: "only PCM WAV files are supported (format tag \(tag))")
                }
                format = (Int(channels), Int(rate), Int(bits))
            } else if id == "data" {
                guard let format else { throw .malformed(path: path, why: "data chunk before fmt chunk") }
                guard format.bits == 16 else {
                    throw .unsupported(path: path, why: "\(format.bits)-bit samples; only 16-bit PCM is supported")
                }
                guard format.channels > 0, format.rate > 0 else {
                    throw .malformed(path: path, why: "\(format.channels) channels at \(format.rate) Hz")
                }
                let available = min(size, reader.remaining) / 2 / format.channels * format.channels
                guard let body = reader.bytes(available * 2) else { break }
                var samples = [Int16](repeating: 0, count: available)
                samples.withUnsafeMutableBytes { out in _ = body.copyBytes(to: out) }
                // RIFF is little-endian, and so is every machine this runs on.
                audio = AudioFrame(samples: samples, channels: format.channels, sampleRate: format.rate)
                return
            }
            guard reader.bytes(size + (size & 1)) != nil else { break }
        }
        throw .malformed(path: path, why: "no data chunk")
    }
}

/// Writes 16-bit PCM to a WAV file; the header is updated on every append, so
/// the file is valid whenever the writer stops.
public final class WavWriter: @unchecked Sendable {
    /// Channels written.
    public let channels: Int
    /// Samples per second per channel.
    public let sampleRate: Int
    private let file: HeaderedFile
    private var dataBytes: UInt32 = 0

    /// Creates the file with an empty data chunk.
    public init(path: String, channels: Int, sampleRate: Int) throws(MediaFileError) {
        self.channels = channels
        self.sampleRate = sampleRate
        file = try HeaderedFile(path: path)
        try file.append(header())
    }

    /// The file being written.
    public var path: String { file.path }
    /// Samples per channel written so far.
    public var framesWritten: Int { Int(dataBytes) / 2 / channels }

    /// Appends interleaved samples and updates the header's sizes.
    public func append(_ samples: [Int16]) throws(MediaFileError) {
        guard !samples.isEmpty else { return }
        let bytes = samples.withUnsafeBytes { Array($0) }
        try file.append(bytes)
        dataBytes &+= UInt32(bytes.count)
        try file.overwrite(at: 4, withSizes())
    }

    /// Closes the file (it was valid before, too).
    public func close() { file.close() }

    private func header() -> [UInt8] {
        var writer = ByteWriter()
        writer.ascii("RIFF")
        writer.u32(36 + dataBytes)
        writer.ascii("WAVEfmt ")
        writer.u32(16)
        writer.u16(1)
        writer.u16(UInt16(channels))
        writer.u32(UInt32(sampleRate))
        writer.u32(UInt32(sampleRate * channels * 2))
        writer.u16(UInt16(channels * 2))
        writer.u16(16)
        writer.ascii("data")
        writer.u32(dataBytes)
        return writer.bytes
    }

    /// The RIFF size (offset 4) and, 32 bytes later, the data size (offset 40).
    private func withSizes() -> [UInt8] { Array(header()[4..<44]) }
}
