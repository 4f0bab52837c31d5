#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Moves a finished temporary file to its final name in a directory without
/// ever replacing an existing file: `name`, then `name (1).ext`, `name (2).ext`…
/// Each attempt is an atomic `link(2)` that fails if the name exists, so two
/// receivers racing for one name both keep their files.
public enum FilePlacement {
    /// Why a file could not be placed.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong, in words for the sender and the log.
        public let description: String
    }

    /// Places `temporary` (in the same file system as `directory`) under a free
    /// name derived from `name`; returns the final path. The temporary name is gone after.
    public static func place(_ temporary: String, in directory: String, as name: String, attempts: Int = 1000)
        throws(Failure) -> String
    {
        for attempt in 0..<attempts {
            let candidate = directory + "/" + numbered(name, attempt)
            if link(temporary, candidate) == 0 {
                unlink(temporary)
                return candidate
            }
            let code = errno
            if code == EEXIST { continue }
            if code == EPERM || code == EOPNOTSUPP {
                // A file system without hard links: rename, after checking the name is free.
                if access(candidate, F_OK) == 0 { continue }
                if rename(temporary, candidate) == 0 { return candidate }
            }
            throw Failure(description: "cannot store \(candidate): \(String(cString: strerror(code)))")
        }
        throw Failure(description: "\(directory) already holds \(attempts) files named like \(name)")
    }

    /// `report.pdf`, `report (1).pdf`, `report (2).pdf`…
    public static func numbered(_ name: String, _ attempt: Int) -> String {
        guard attempt > 0 else { return name }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return "\(name[..<dot]) (\(attempt))\(name[dot...])"
        }
        return "\(name) (\(attempt))"
    }
}
