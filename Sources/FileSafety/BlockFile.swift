import Glibc

/// A file read or written in blocks with plain system calls, for transfers.
///
/// Foundation's `FileHandle.read(upToCount:)` returns fresh memory on every
/// call (a 1 MiB block is new pages, faulted in and zeroed each time) as
/// `Data` that then needs a copy into an array, and `write(contentsOf:)`
/// wants `Data` made from the array: reading and hashing a 50 MB file cost a
/// sender about a sixth of its CPU (perf). Here a block is read straight into
/// the array that is sent, hashing reads into one buffer, and writes go from
/// the array. Owned by one actor at a time; not thread-safe.
public final class BlockFile {
    /// A system call's failure, with its errno.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        /// The errno.
        public let code: Int32
        /// strerror's words for it.
        public var description: String { String(cString: strerror(code)) }
    }

    private var descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close() }

    /// An existing file, to read; nil if it cannot be opened.
    public static func openForReading(_ path: String) -> BlockFile? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        return descriptor < 0 ? nil : BlockFile(descriptor: descriptor)
    }

    /// A new file only this user may read (`0600`); nil if it exists or cannot be made.
    public static func create(_ path: String) -> BlockFile? {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        return descriptor < 0 ? nil : BlockFile(descriptor: descriptor)
    }

    /// Up to `count` bytes from the current position; empty at the end.
    public func read(upTo count: Int) throws(Failure) -> [UInt8] {
        var failure: Int32 = 0
        let block = [UInt8](unsafeUninitializedCapacity: max(count, 0)) { buffer, initialized in
            initialized = 0
            guard let base = buffer.baseAddress else { return }
            (initialized, failure) = Self.readAll(into: UnsafeMutableRawPointer(base), count: count) {
                pointer, left, _ in
                Glibc.read(descriptor, pointer, left)
            }
        }
        if failure != 0 { throw Failure(code: failure) }
        return block
    }

    /// Calls `body` with each block of the rest of the file, read into one
    /// reused buffer of `size` bytes (the last block may be shorter).
    public func forEachBlock(size: Int, _ body: (UnsafeRawBufferPointer) -> Void) throws(Failure) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
        defer { buffer.deallocate() }
        while true {
            let got = Glibc.read(descriptor, buffer.baseAddress, size)
            if got > 0 {
                body(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            } else if got == 0 {
                return
            } else if errno != EINTR {
                throw Failure(code: errno)
            }
        }
    }

    /// Writes all of `bytes` at the current position.
    public func write(_ bytes: [UInt8]) throws(Failure) {
        try bytes.withUnsafeBytes { raw in
            Result { () throws(Failure) in
                try writeAll(raw) { pointer, count, _ in Glibc.write(descriptor, pointer, count) }
            }
        }.get()
    }

    /// Calls `read(pointer, count, offset)` until `count` bytes are at `base`
    /// or the file ends (EINTR is tried again): how many came, and the errno
    /// of a read that failed (0 if none did). `offset` is how many came before.
    static func readAll(
        into base: UnsafeMutableRawPointer, count: Int, _ read: (UnsafeMutableRawPointer, Int, Int) -> Int
    ) -> (got: Int, failure: Int32) {
        var got = 0
        while got < count {
            let came = read(base + got, count - got, got)
            if came > 0 {
                got += came
            } else if came == 0 {
                break
            } else if errno != EINTR {
                return (got, errno)
            }
        }
        return (got, 0)
    }

    /// Calls `write(pointer, count, offset)` until every byte is written (a
    /// short write goes on from where it stopped, EINTR is tried again).
    private func writeAll(_ raw: UnsafeRawBufferPointer, _ write: (UnsafeRawPointer, Int, Int) -> Int) throws(Failure) {
        guard let base = raw.baseAddress else { return }
        var done = 0
        while done < raw.count {
            let wrote = write(base + done, raw.count - done, done)
            if wrote >= 0 {
                done += wrote
            } else if errno != EINTR {
                throw Failure(code: errno)
            }
        }
    }

    /// A file to read and write at positions, made (`0600`) if it is not
    /// there: a transfer's partial file, which a transfer resumes from.
    public static func openForUpdate(_ path: String) -> BlockFile? {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        return descriptor < 0 ? nil : BlockFile(descriptor: descriptor)
    }

    /// The descriptor (-1 once closed), for a reader off the owner's thread
    /// (hashing with `pread` on a task of its own).
    public var fileDescriptor: Int32 { descriptor }

    /// Its size now, in bytes.
    public func size() throws(Failure) -> UInt64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw Failure(code: errno) }
        return UInt64(max(info.st_size, 0))
    }

    /// Cuts (or extends) it to `length` bytes.
    public func truncate(to length: UInt64) throws(Failure) {
        guard ftruncate(descriptor, off_t(length)) == 0 else { throw Failure(code: errno) }
    }

    /// Writes all of `bytes` at `position`, wherever the current position is.
    public func write(_ bytes: [UInt8], at position: UInt64) throws(Failure) {
        try bytes.withUnsafeBytes { raw in Result { () throws(Failure) in try write(raw, at: position) } }.get()
    }

    /// Writes all of the bytes at `raw` at `position` (bytes that live in a C library's buffer).
    public func write(_ raw: UnsafeRawBufferPointer, at position: UInt64) throws(Failure) {
        try writeAll(raw) { pointer, count, done in pwrite(descriptor, pointer, count, off_t(position) + off_t(done)) }
    }

    /// SHA-256 of its first `size` bytes (`Sha256.file`).
    public func sha256(size: UInt64) -> [UInt8]? { Sha256.file(fd: descriptor, size: size) }

    /// Closes it (at once; also when it is let go).
    public func close() {
        guard descriptor >= 0 else { return }
        _ = Glibc.close(descriptor)
        descriptor = -1
    }
}
