import Foundation

/// The open data channels by stream id, readable from the SCTP queue so
/// messages reach their channel without passing through the peer
/// connection actor.
final class ChannelDirectory: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var channels: [UInt16: DataChannel] = [:]

    func insert(_ channel: DataChannel, id: UInt16) { lock.withLock { channels[id] = channel } }
    func channel(_ id: UInt16) -> DataChannel? { lock.withLock { channels[id] } }
    func remove(_ id: UInt16) -> DataChannel? { lock.withLock { channels.removeValue(forKey: id) } }
    func removeAll() -> [DataChannel] {
        lock.withLock {
            defer { channels = [:] }
            return Array(channels.values)
        }
    }
}
