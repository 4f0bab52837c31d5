import Foundation

/// The bytes a store keeps in all, for the node's cap (`StoreLimits.bytesPerNode`),
/// without a sum over every record at every deposit: that made each deposit
/// cost more as the store filled (PostgreSQL, one node: 562-620 deposits/s
/// against 878-1048 without it in `bench_express`). The sum is asked again
/// once it is `maxAge` old; in between, deposits this process made are added.
/// Several nodes on one database each see the others' deposits within
/// `maxAge`: a cap that may be passed by what they store in that time.
final class NodeTotal: @unchecked Sendable {
    private let lock = NSLock()
    private var bytes: Int64 = 0
    private var asked: Int64?
    let maxAgeMilliseconds: Int64

    init(maxAgeMilliseconds: Int64 = 2000) { self.maxAgeMilliseconds = maxAgeMilliseconds }

    /// The total at `now` (ms), asking `sum` when the last answer is too old.
    func current(now: Int64, sum: () throws(DatabaseFailure) -> Int64) throws(DatabaseFailure) -> Int64 {
        let stale = lock.withLock { asked.map { now - $0 >= maxAgeMilliseconds } ?? true }
        guard stale else { return lock.withLock { bytes } }
        let total = try sum()
        return lock.withLock {
            bytes = total
            asked = now
            return bytes
        }
    }

    /// A deposit of `size` bytes was stored.
    func add(_ size: Int) { lock.withLock { bytes += Int64(size) } }
}
