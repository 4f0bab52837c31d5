#if canImport(Glibc)
    import Glibc
#endif

/// Reads lines from a file descriptor without ever holding more than
/// `maxLine` bytes of one: a longer line is read to its end and dropped, and
/// reported by its length. (`readLine` buffered a whole line first: a 400 MB
/// line took 851 MB of memory before its length could be checked.)
struct BoundedLineReader {
    enum Line: Equatable {
        case text([UInt8])
        /// A line longer than the limit, dropped; at least this many bytes.
        case tooLong(Int)
    }

    let fd: Int32
    let maxLine: Int
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var pending: [UInt8] = []
    private var start = 0
    private var end = 0
    private var overflow = 0

    init(fd: Int32, maxLine: Int) {
        self.fd = fd
        self.maxLine = maxLine
    }

    /// The next line without its newline (and a CR before it); nil at the end of input.
    mutating func next() -> Line? {
        while true {
            if let newline = buffer[start..<end].firstIndex(of: 0x0A) {
                let piece = buffer[start..<newline]
                start = newline + 1
                if overflow > 0 || pending.count + piece.count > maxLine {
                    defer {
                        overflow = 0
                        pending = []
                    }
                    return .tooLong(overflow + pending.count + piece.count)
                }
                var line = pending + piece
                pending = []
                if line.last == 0x0D { line.removeLast() }
                return .text(line)
            }
            // No newline in what is buffered: keep it (up to the limit) and read more.
            let piece = buffer[start..<end]
            if overflow > 0 || pending.count + piece.count > maxLine {
                overflow += pending.count + piece.count
                pending = []
            } else {
                pending += piece
            }
            start = 0
            end = 0
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                // The end of input: a last line without a newline still counts.
                if overflow > 0 {
                    defer { overflow = 0 }
                    return .tooLong(overflow)
                }
                guard !pending.isEmpty else { return nil }
                defer { pending = [] }
                return .text(pending)
            }
            end = count
        }
    }
}
