import Foundation
import RtcCodecs

/// YUV4MPEG2 (Y4M): a text header line, then `FRAME` lines each followed by
/// one raw picture. Only 4:2:0 (I420) pictures are read. The file is mapped,
/// not read: pictures are copied out one at a time (`frame(at:)`), so a long
/// file costs no memory up front.
public struct Y4mFile: Sendable {
    /// Picture width.
    public let width: Int
    /// Picture height.
    public let height: Int
    /// The frame rate the header states.
    public let framesPerSecond: Double
    /// Where each picture starts in the file.
    private let offsets: [Int]
    private let data: Data

    /// Pictures in the file.
    public var frameCount: Int { offsets.count }

    /// The picture at `index`, copied out of the mapped file (nil past the end).
    public func frame(at index: Int) -> VideoFrame? {
        guard offsets.indices.contains(index) else { return nil }
        let start = data.startIndex + offsets[index]
        let bytes = VideoFrame.byteCount(width: width, height: height)
        return VideoFrame(width: width, height: height, data: Array(data[start..<start + bytes]))
    }

    /// Copies a picture into `buffer` (resized if needed), reusing its storage:
    /// a source reading frame after frame allocates nothing.
    public func copyFrame(at index: Int, into buffer: inout [UInt8]) -> Bool {
        guard offsets.indices.contains(index) else { return false }
        let bytes = VideoFrame.byteCount(width: width, height: height)
        if buffer.count != bytes { buffer = [UInt8](repeating: 0, count: bytes) }
        let start = data.startIndex + offsets[index]
        buffer.withUnsafeMutableBytes { _ = data.copyBytes(to: $0, from: start..<start + bytes) }
        return true
    }

    /// Runs `body` on a picture's bytes in place (in the mapped file): no copy.
    public func withFrame<T>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T? {
        guard offsets.indices.contains(index) else { return nil }
        let bytes = VideoFrame.byteCount(width: width, height: height)
        let start = offsets[index]
        return try data.withUnsafeBytes { all in try body(UnsafeRawBufferPointer(rebasing: all[start..<start + bytes]))
        }
    }

    /// Every picture, read at once (for checks on small files).
    public var frames: [VideoFrame] { (0..<frameCount).compactMap { frame(at: $0) } }

    /// Maps the file and finds its pictures; anything but 4:2:0 is a clear error.
    public init(path: String) throws(MediaFileError) {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) else {
            throw .cannotOpen(path)
        }
        guard let headerEnd = data.prefix(1024).firstIndex(of: 0x0A) else {
            throw .malformed(path: path, why: "no Y4M header line")
        }
        let header = String(decoding: data[data.startIndex..<headerEnd], as: UTF8.self).split(separator: " ")
        guard header.first == "YUV4MPEG2" else { throw .malformed(path: path, why: "no YUV4MPEG2 signature") }
        var width = 0
        var height = 0
        var rate = 30.0
        for field in header.dropFirst() {
            let value = field.dropFirst()
            switch field.first {
            case "W": width = Int(value) ?? 0
            case "H": height = Int(value) ?? 0
            case "F":
                let parts = value.split(separator: ":").compactMap { Double($0) }
                if parts.count == 2, parts[1] > 0 { rate = parts[0] / parts[1] }
            case "C":
                guard value.hasPrefix("420") else {
                    throw .unsupported(path: path, why: "colour space C\(value); only 4:2:0 is supported")
                }
            case "I":
                guard value == "p" || value == "?" else {
                    throw .unsupported(path: path, why: "interlaced video; only progressive is supported")
                }
            default: break
            }
        }
        guard width > 0, height > 0, width <= 8192, height <= 8192 else {
            throw .malformed(path: path, why: "bad size \(width)x\(height)")
        }
        let pictureBytes = VideoFrame.byteCount(width: width, height: height)
        var offsets: [Int] = []
        var at = headerEnd + 1
        while at < data.endIndex {
            guard let lineEnd = data[at..<min(at + 256, data.endIndex)].firstIndex(of: 0x0A),
                data[at..<lineEnd].starts(with: Array("FRAME".utf8))
            else { break }
            let start = lineEnd + 1
            guard data.endIndex - start >= pictureBytes else { break }  // a cut-short last frame
            offsets.append(start - data.startIndex)
            at = start + pictureBytes
        }
        self.width = width
        self.height = height
        self.framesPerSecond = rate
        self.offsets = offsets
        self.data = data
    }
}

/// Writes I420 pictures to Y4M; every frame is complete on disk when append returns.
public final class Y4mWriter: @unchecked Sendable {
    private let file: HeaderedFile
    /// Picture width.
    public let width: Int
    /// Picture height.
    public let height: Int
    /// Pictures appended so far.
    public private(set) var framesWritten = 0

    /// Creates the file and writes its header line.
    public init(path: String, width: Int, height: Int, framesPerSecond: Int) throws(MediaFileError) {
        self.width = width
        self.height = height
        file = try HeaderedFile(path: path)
        try file.append(Array("YUV4MPEG2 W\(width) H\(height) F\(framesPerSecond):1 Ip A1:1 C420jpeg\n".utf8))
    }

    /// The file being written.
    public var path: String { file.path }
    private static let frameHeader = Array("FRAME\n".utf8)

    /// Appends one I420 picture of the writer's size.
    public func append(_ frame: VideoFrame) throws(MediaFileError) {
        guard frame.width == width, frame.height == height else {
            throw .writeFailed("\(file.path): picture is \(frame.width)x\(frame.height), file is \(width)x\(height)")
        }
        try file.append(Self.frameHeader, frame.data)
        framesWritten += 1
    }

    /// Closes the file.
    public func close() { file.close() }
}
