import Glibc

/// Free space on a file system, and a guard that keeps some of it free
/// while a peer's data is written.
public enum FreeSpace {
    /// Bytes free for an unprivileged user on the file system of `directory`
    /// (or of its nearest existing parent); nil if it cannot be asked.
    public static func bytes(at directory: String) -> UInt64? {
        var info = statvfs()
        var path = directory
        // The directory may not exist yet: ask about the nearest one that does.
        while statvfs(path, &info) != 0 {
            guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else {
                return statvfs(".", &info) == 0 ? UInt64(info.f_bavail) * UInt64(info.f_frsize) : nil
            }
            path = String(path[..<slash])
        }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    /// Refuses a write that would leave less than `reserve` bytes free. The
    /// file system is asked again after every `recheckEvery` bytes (and at
    /// the first write), not at every write: a few system calls a gigabyte.
    public struct Guard: Sendable {
        /// The folder written into.
        public let directory: String
        /// Bytes to leave free.
        public let reserve: UInt64
        /// Bytes written between two questions to the file system.
        public let recheckEvery: UInt64
        private var sinceCheck: UInt64 = 0
        private var allowed: UInt64 = 0
        private let free: @Sendable (String) -> UInt64?

        /// A guard for writes into `directory`; `free` asks the file system (tests give their own).
        public init(
            directory: String, reserve: UInt64, recheckEvery: UInt64 = 8 << 20,
            free: @escaping @Sendable (String) -> UInt64? = FreeSpace.bytes(at:)
        ) {
            self.directory = directory
            self.reserve = reserve
            self.recheckEvery = recheckEvery
            self.free = free
        }

        /// Why `count` more bytes may not be written, or nil if they may.
        public mutating func refusal(adding count: Int) -> String? {
            let count = UInt64(max(count, 0))
            if sinceCheck == 0 || sinceCheck + count > recheckEvery || count > allowed {
                let available = free(directory) ?? 0
                allowed = available > reserve ? available - reserve : 0
                sinceCheck = 0
            }
            guard count <= allowed else {
                return "the disk of \(directory) would have less than \(reserve >> 20) MiB free: cut"
            }
            allowed -= count
            sinceCheck += max(count, 1)
            return nil
        }
    }
}
