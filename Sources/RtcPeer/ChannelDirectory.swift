import Foundation

/// The open data channels by stream id, readable from the SCTP queue so
/// messages reach their channel without passing through the peer
/// connection actor; and the channels still opening (no stream id yet), so
/// that closing the connection closes them too.
final class ChannelDirectory: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var channels: [UInt16: DataChannel] = [:]
    private var opening: [ObjectIdentifier: DataChannel] = [:]

    /// A channel handed to SCTP to open; `insert` or `removeAll` takes it off the list.
    func opening(_ channel: DataChannel) { lock.withLock { opening[ObjectIdentifier(channel)] = channel } }

    /// Takes a channel off the opening list; false if it was not there any more (closed meanwhile).
    func opened(_ channel: DataChannel) -> Bool {
        lock.withLock { opening.removeValue(forKey: ObjectIdentifier(channel)) != nil }
    }

    func insert(_ channel: DataChannel, id: UInt16) { lock.withLock { channels[id] = channel } }
    func channel(_ id: UInt16) -> DataChannel? { lock.withLock { channels[id] } }
    func remove(_ id: UInt16) -> DataChannel? { lock.withLock { channels.removeValue(forKey: id) } }
    /// Every channel, open or opening, now off the directory.
    func removeAll() -> [DataChannel] {
        lock.withLock {
            defer {
                channels = [:]
                opening = [:]
            }
            return Array(channels.values) + Array(opening.values)
        }
    }
}
