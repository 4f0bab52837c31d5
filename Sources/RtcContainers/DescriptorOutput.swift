import CFFmpeg
import FileSafety
import Glibc
import RtcMediaFiles

/// libavformat's output on a file this process created itself
/// (`PrivateFiles.create`: new, 0600, no symbolic link). libavformat's own
/// `file:` protocol opens with `O_TRUNC` and follows links, which let a
/// recording named after a peer's call id overwrite any file the user could
/// write. Writes and seeks go straight to the descriptor, on the caller's
/// thread (the muxer's).
final class DescriptorOutput {
    /// The I/O context for `AVFormatContext.pb`.
    private(set) var context: UnsafeMutablePointer<AVIOContext>?
    /// Holds the descriptor for the C callbacks (their opaque pointer).
    private let descriptor: UnsafeMutablePointer<Int32>

    static let bufferSize = 64 * 1024

    /// Creates `path` (it must not exist) and an I/O context writing to it.
    init(path: String) throws(MediaFileError) {
        let created: Int32
        switch PrivateFiles.create(path) {
        case .success(let value): created = value
        case .failure(let failure): throw .writeFailed(failure.description)
        }
        descriptor = .allocate(capacity: 1)
        descriptor.initialize(to: created)
        guard let buffer = av_malloc(Self.bufferSize)?.assumingMemoryBound(to: UInt8.self),
            let context = avio_alloc_context(
                buffer, Int32(Self.bufferSize), 1, descriptor, nil, descriptorWrite, descriptorSeek)
        else {
            _ = Glibc.close(created)
            descriptor.deallocate()
            throw .writeFailed("\(path): out of memory")
        }
        self.context = context
    }

    /// Flushes, frees the context and closes the file; a second call does nothing.
    func close() {
        guard var context else { return }
        avio_flush(context)
        av_freep(&context.pointee.buffer)
        var freeing: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&freeing)
        self.context = nil
        _ = Glibc.close(descriptor.pointee)
        context = freeing ?? context
    }

    deinit {
        close()
        descriptor.deallocate()
    }
}

/// Writes a whole buffer (libavformat treats a short count as an error).
private func descriptorWrite(_ opaque: UnsafeMutableRawPointer?, _ bytes: UnsafeMutablePointer<UInt8>?, _ count: Int32)
    -> Int32
{
    guard let descriptor = opaque?.assumingMemoryBound(to: Int32.self).pointee, let bytes else { return -EINVAL }
    var done = 0
    while done < Int(count) {
        let written = write(descriptor, bytes + done, Int(count) - done)
        if written < 0 {
            if errno == EINTR { continue }
            return -errno
        }
        done += written
    }
    return count
}

/// Seeks, or tells the size when libavformat asks with `AVSEEK_SIZE`.
private func descriptorSeek(_ opaque: UnsafeMutableRawPointer?, _ offset: Int64, _ whence: Int32) -> Int64 {
    guard let descriptor = opaque?.assumingMemoryBound(to: Int32.self).pointee else { return Int64(-EINVAL) }
    if whence & AVSEEK_SIZE != 0 {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int64(status.st_size) : Int64(-errno)
    }
    let position = lseek(descriptor, off_t(offset), whence & ~AVSEEK_FORCE)
    return position < 0 ? Int64(-errno) : Int64(position)
}
