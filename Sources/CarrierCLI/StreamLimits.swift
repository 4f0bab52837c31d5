import CarrierNode

/// What `listen --sessions --receive-dir` saves of a friend's streams: each
/// stream at most `maxBytes`, and never so much that the disk keeps less
/// than `diskReserve` free. A stream past either is cut (the peer sees the
/// stream end) and its file kept as far as it got.
struct StreamLimits: Sendable {
    /// Bytes saved of one stream at most.
    var maxBytes: UInt64 = 1 << 30
    /// Bytes the disk keeps free.
    var diskReserve: UInt64 = 512 << 20

    static let valued: Set<String> = ["--max-stream-mb", "--disk-reserve-mb"]

    static let help = """
            --max-stream-mb N  save at most N MiB of one stream (default 1024); a longer
                               stream is cut
            --disk-reserve-mb N
                               cut a stream that would leave the disk less than N MiB
                               free (default 512); a file is accepted only when the disk
                               holds it, the files under way and this much more
        """

    static func parse(_ arguments: Arguments, configured: NetworkConfig.Limits = .init()) throws(UsageError)
        -> StreamLimits
    {
        var limits = StreamLimits()
        if let megabytes = configured.maxStreamMB { limits.maxBytes = UInt64(megabytes) << 20 }
        if let megabytes = configured.diskReserveMB { limits.diskReserve = UInt64(megabytes) << 20 }
        if let megabytes = try arguments.integer("--max-stream-mb", in: 1...(1 << 30)) {
            limits.maxBytes = UInt64(megabytes) << 20
        }
        if let megabytes = try arguments.integer("--disk-reserve-mb", in: 0...(1 << 30)) {
            limits.diskReserve = UInt64(megabytes) << 20
        }
        return limits
    }

    /// Why a stream that has brought `total` bytes is cut, or nil.
    func refusal(total: Int) -> String? {
        UInt64(total) > maxBytes ? "the stream passed --max-stream-mb (\(maxBytes >> 20) MiB): cut" : nil
    }
}
