import Glibc

/// Files and folders made for what peers send (recordings, received streams
/// and files): private to the user, never through a symbolic link, and never
/// over a file that was there before.
///
/// A recording named after a call used to be opened with `O_TRUNC` and
/// followed symbolic links, so whoever could put a link or a file where a
/// recording would go chose what the node overwrote.
public enum PrivateFiles {
    /// What refused a file or a folder.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        /// The path refused.
        public let path: String
        /// The errno.
        public let code: Int32

        /// The path and why, in words that say what to do.
        public var description: String {
            switch code {
            case EEXIST: "\(path) exists already: it is kept; record somewhere else or move it away"
            case ELOOP: "\(path) is a symbolic link: refused"
            default: "cannot create \(path): \(String(cString: strerror(code)))"
            }
        }
    }

    /// Creates `path` for writing and returns its descriptor. The file must
    /// not exist (`O_EXCL`: nothing is truncated) and the last component must
    /// not be a symbolic link (`O_EXCL` refuses one, `O_NOFOLLOW` says so).
    /// Mode 0600 unless `mode` says otherwise (the umask still applies).
    public static func create(_ path: String, mode: mode_t = 0o600) -> Result<Int32, Failure> {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            // O_EXCL on a link reports EEXIST; say what it is.
            var status = stat()
            let code = lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFLNK ? ELOOP : errno
            return .failure(Failure(path: path, code: code))
        }
        return .success(descriptor)
    }

    /// Creates `path` as `create` does and writes `bytes` to it whole, on
    /// disk (fsync) before it returns. A file that could not be written whole
    /// is removed: what is there is all of it or nothing.
    public static func write(_ bytes: [UInt8], to path: String) -> Result<Void, Failure> {
        let descriptor: Int32
        switch create(path) {
        case .success(let opened): descriptor = opened
        case .failure(let failure): return .failure(failure)
        }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return abandon(descriptor, path) }
            written += count
        }
        guard fsync(descriptor) == 0 else { return abandon(descriptor, path) }
        close(descriptor)
        return .success(())
    }

    private static func abandon(_ descriptor: Int32, _ path: String) -> Result<Void, Failure> {
        let code = errno == 0 ? EIO : errno
        close(descriptor)
        unlink(path)
        return .failure(Failure(path: path, code: code))
    }

    /// Makes a folder and its missing parents, each new one with mode 0700.
    /// An existing folder is kept as it is; an existing symbolic link or
    /// file at the last component is refused.
    @discardableResult
    public static func makeDirectory(_ path: String, mode: mode_t = 0o700) -> Result<Void, Failure> {
        guard !path.isEmpty else { return .success(()) }
        var status = stat()
        if lstat(path, &status) == 0 {
            if (status.st_mode & S_IFMT) == S_IFDIR { return .success(()) }
            return .failure(Failure(path: path, code: (status.st_mode & S_IFMT) == S_IFLNK ? ELOOP : ENOTDIR))
        }
        let parent = parentOf(path)
        if !parent.isEmpty, parent != path, case .failure(let failure) = makeDirectory(parent, mode: mode) {
            return .failure(failure)
        }
        guard mkdir(path, mode) == 0 || errno == EEXIST else { return .failure(Failure(path: path, code: errno)) }
        return .success(())
    }

    /// A new folder with an unpredictable name under the temporary directory
    /// (mkdtemp: `PREFIX-XXXXXX`, 0700); nil if none can be made. A name built
    /// from the pid can be made first by another user, as a link to a folder
    /// of theirs.
    public static func makeTemporaryDirectory(prefix: String) -> String? {
        let base = (getenv("TMPDIR").map { String(cString: $0) }).flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base + "/" + prefix + "-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { return nil }
        return String(cString: made)
    }

    /// The folder holding `path` ("" for a bare name, "/" for a child of the root).
    static func parentOf(_ path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }
}
