import FileSafety

/// The SHA-256 of a partial file's bytes, taken as they are written, while
/// they come in order from the first byte (both paths send a file from its
/// start or its resume point onwards). The receiver's check then costs
/// nothing at the end: re-reading the file delayed the verdict by 60-100 ms
/// of a 30 MB transfer that took a second. Anything else (a resume from
/// bytes already on disk, a write out of order) leaves it without an
/// answer, and the file is hashed from disk as before.
final class RunningDigest {
    private var sha = Sha256()
    /// How many bytes from the start the digest holds.
    private var covered: UInt64 = 0
    /// False once a write did not continue where the last one ended.
    private var inOrder = true
    private var finished: [UInt8]?

    /// `bytes` were written at `position`.
    func add(_ bytes: [UInt8], at position: UInt64) {
        bytes.withUnsafeBytes { add($0, at: position) }
    }

    /// The bytes at `raw` were written at `position`.
    func add(_ raw: UnsafeRawBufferPointer, at position: UInt64) {
        guard inOrder, finished == nil, position == covered else {
            inOrder = false
            return
        }
        sha.update(raw)
        covered += UInt64(raw.count)
    }

    /// The file was emptied: start again from its first byte.
    func reset() {
        (sha, covered, inOrder, finished) = (Sha256(), 0, true, nil)
    }

    /// The SHA-256 of the first `size` bytes, if every one of them, and no
    /// other, went through `add` in order; nil otherwise.
    func digest(ofFirst size: UInt64) -> [UInt8]? {
        guard inOrder, covered == size else { return nil }
        if let finished { return finished }
        let digest = sha.finish()
        finished = digest
        return digest
    }
}
