/// What can go wrong reading or writing a media file; the message says which file and why.
public enum MediaFileError: Error, Equatable, Sendable, CustomStringConvertible {
    case cannotOpen(String)
    case malformed(path: String, why: String)
    case unsupported(path: String, why: String)
    case writeFailed(String)

    /// What went wrong and with which file.
    public var description: String {
        switch self {
        case .cannotOpen(let path): "cannot open \(path)"
        case .malformed(let path, let why): "\(path) is not a valid media file: \(why)"
        case .unsupported(let path, let why): "\(path): \(why)"
        case .writeFailed(let why): "writing media: \(why)"
        }
    }
}
