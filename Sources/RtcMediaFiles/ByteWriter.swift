import FileSafety
import Foundation

/// Little-endian serialization for file headers.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { bytes += [UInt8(value & 0xFF), UInt8(value >> 8)] }
    mutating func u32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8((value >> UInt32(shift)) & 0xFF)) }
    }
    mutating func u64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8((value >> UInt64(shift)) & 0xFF)) }
    }
    mutating func ascii(_ text: String) { bytes += Array(text.utf8) }
}

/// Little-endian reads from a file's bytes, bounds-checked.
struct LittleEndianReader {
    let data: Data
    var offset: Int

    init(_ data: Data, offset: Int = 0) {
        self.data = data
        self.offset = offset
    }

    var remaining: Int { data.count - offset }

    mutating func bytes(_ count: Int) -> Data? {
        guard count >= 0, remaining >= count else { return nil }
        defer { offset += count }
        let start = data.startIndex + offset
        return data[start..<start + count]
    }

    mutating func u16() -> UInt16? { bytes(2).map { UInt16($0[$0.startIndex]) | UInt16($0[$0.startIndex + 1]) << 8 } }
    mutating func u32() -> UInt32? {
        bytes(4).map { b in (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[b.startIndex + $1]) << UInt32(8 * $1) } }
    }
    mutating func u64() -> UInt64? {
        bytes(8).map { b in (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[b.startIndex + $1]) << UInt64(8 * $1) } }
    }
    mutating func ascii(_ count: Int) -> String? { bytes(count).map { String(decoding: $0, as: UTF8.self) } }
}

/// A file written from the start, whose header can be rewritten in place so that
/// the file is valid after every write (a recording cut short stays playable).
/// Appends go straight from the caller's buffers to the kernel (pwrite/writev at
/// the end offset it keeps), with no copy on the way: a decoded 640x480 picture
/// is 460 KB, thirty times a second.
final class HeaderedFile {
    /// -1 once closed.
    private var descriptor: Int32
    private var end: off_t = 0
    let path: String

    /// A new file, 0600: one that exists already, or a symbolic link, is
    /// refused (a recording never overwrites what it did not create).
    init(path: String) throws(MediaFileError) {
        switch PrivateFiles.create(path) {
        case .success(let descriptor): self.descriptor = descriptor
        case .failure(let failure): throw .writeFailed(failure.description)
        }
        self.path = path
    }

    func append(_ bytes: [UInt8]) throws(MediaFileError) { try append(bytes, []) }

    /// Appends two buffers in one system call (a frame header and its body).
    func append(_ first: [UInt8], _ second: [UInt8]) throws(MediaFileError) {
        let total = first.count + second.count
        let written = first.withUnsafeBytes { a in
            second.withUnsafeBytes { b in
                var vectors = [
                    iovec(iov_base: UnsafeMutableRawPointer(mutating: a.baseAddress), iov_len: a.count),
                    iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress), iov_len: b.count),
                ]
                return pwritev(descriptor, &vectors, b.count > 0 ? 2 : 1, end)
            }
        }
        guard written == total else {
            throw .writeFailed("\(path): \(written < 0 ? String(cString: strerror(errno)) : "short write")")
        }
        end += off_t(total)
    }

    func overwrite(at offset: UInt64, _ bytes: [UInt8]) throws(MediaFileError) {
        let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        guard written == bytes.count else { throw .writeFailed("\(path): cannot rewrite the header") }
    }

    /// Closes the file; a second call does nothing.
    func close() {
        guard descriptor >= 0 else { return }
        _ = Glibc.close(descriptor)
        descriptor = -1
    }

    // A writer whose header could not be written (a full disk) throws from
    // its init and drops this file unclosed: each drop left a descriptor
    // open, and a recorder that tried again at every packet leaked 150 of
    // them in the seconds a disk was full.
    deinit { close() }
}
