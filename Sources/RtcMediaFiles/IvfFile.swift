import Foundation

/// IVF (the libvpx container): a 32-byte header, then frames each with a
/// 12-byte header (size, 64-bit timestamp in the header's time base).
public struct IvfFile: Sendable {
    /// One VP8 frame as stored, with its timestamp in the file's time base.
    public struct Frame: Sendable, Equatable {
        /// The frame's bytes (a whole VP8 frame).
        public var data: [UInt8]
        /// When it plays, in units of `timebase`.
        public var timestamp: UInt64
    }

    /// The codec's four-character code (`VP80`).
    public let fourcc: String
    /// Picture width from the header.
    public let width: Int
    /// Picture height from the header.
    public let height: Int
    /// Seconds per timestamp unit = numerator / denominator.
    public let timebase: (numerator: Int, denominator: Int)
    /// Every frame, in file order.
    public let frames: [Frame]

    /// Reads the whole file; a bad header or a cut frame is a clear error.
    public init(path: String) throws(MediaFileError) {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) else {
            throw .cannotOpen(path)
        }
        var reader = LittleEndianReader(data)
        guard reader.ascii(4) == "DKIF", reader.u16() != nil, let headerLength = reader.u16(),
            let fourcc = reader.ascii(4), let width = reader.u16(), let height = reader.u16(),
            let denominator = reader.u32(), let numerator = reader.u32(), reader.u32() != nil
        else { throw .malformed(path: path, why: "no IVF header") }
        guard fourcc == "VP80" else {
            throw .unsupported(path: path, why: "codec \(fourcc); only VP8 (VP80) is supported")
        }
        guard numerator > 0, denominator > 0 else { throw .malformed(path: path, why: "zero time base") }
        reader.offset = Int(max(headerLength, 32))
        var frames: [Frame] = []
        while reader.remaining >= 12 {
            guard let size = reader.u32(), let timestamp = reader.u64() else { break }
            // A truncated last frame (a recording cut short) ends the file.
            guard size > 0, let body = reader.bytes(Int(size)) else { break }
            frames.append(Frame(data: Array(body), timestamp: timestamp))
        }
        self.fourcc = fourcc
        self.width = Int(width)
        self.height = Int(height)
        self.timebase = (Int(numerator), Int(denominator))
        self.frames = frames
    }

    /// A frame's time in seconds.
    public func seconds(_ frame: Frame) -> Double {
        Double(frame.timestamp) * Double(timebase.numerator) / Double(timebase.denominator)
    }
}

/// Writes VP8 frames to IVF with millisecond timestamps. The header's length
/// field (libvpx calls it the frame count; ffmpeg reads it as the duration in
/// time-base units) holds the duration in milliseconds, so that ffmpeg reports
/// the right length; it is kept current, so the file is valid whenever the
/// writer stops.
public final class IvfWriter: @unchecked Sendable {
    private let file: HeaderedFile
    private var count: UInt32 = 0
    private var first: UInt64 = 0

    /// Creates the file (VP8, time base 1/1000 s) and writes its header.
    public init(path: String, width: Int, height: Int) throws(MediaFileError) {
        file = try HeaderedFile(path: path)
        var header = ByteWriter()
        header.ascii("DKIF")
        header.u16(0)
        header.u16(32)
        header.ascii("VP80")
        header.u16(UInt16(clamping: width))
        header.u16(UInt16(clamping: height))
        header.u32(1000)  // time base 1/1000 s: timestamps in milliseconds
        header.u32(1)
        header.u32(0)
        header.u32(0)
        try file.append(header.bytes)
    }

    /// The file being written.
    public var path: String { file.path }
    /// Frames appended so far.
    public var framesWritten: Int { Int(count) }

    /// Appends one frame at a time in milliseconds; the header's count is kept current.
    public func append(_ frame: [UInt8], milliseconds: UInt64) throws(MediaFileError) {
        var header = ByteWriter()
        header.u32(UInt32(frame.count))
        header.u64(milliseconds)
        try file.append(header.bytes, frame)
        count += 1
        // The next frame is due about one frame interval later: count this one's time too.
        let interval = count > 1 ? (milliseconds - first) / UInt64(count - 1) : 33
        if count == 1 { first = milliseconds }
        var length = ByteWriter()
        length.u32(UInt32(clamping: milliseconds - first + interval))
        try file.overwrite(at: 24, length.bytes)
    }

    /// Closes the file (it was valid before, too).
    public func close() { file.close() }
}
