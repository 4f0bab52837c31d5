import CarrierNode

/// Which way a friend file's bytes go.
public enum FilePath: String, Sendable, Equatable {
    /// A WebRTC session with the friend (ICE, DTLS, SCTP): link speed.
    case direct
    /// Toxcore's own file transfer: works whenever the friend is reachable at all, slowly.
    case toxcore
    /// A Beagle file message: the whole file in one Carrier message (at most
    /// 5 MiB), to and from a Carrier peer, which takes neither path above.
    case message
}

/// A file transfer's event (the same events as `Carrier`'s) and the path it is about.
public struct FriendFileEvent: Sendable, Equatable {
    /// What happened.
    public let event: FileTransferEvent
    /// The path it happened on.
    public let path: FilePath

    /// An event on a path.
    public init(_ event: FileTransferEvent, path: FilePath) {
        self.event = event
        self.path = path
    }
}

/// What the application can do to a transfer on the direct path while it
/// runs; from any thread (each becomes an input of the transfer's loop).
protocol DirectControls: Sendable {
    func pause()
    func resume()
    func cancel(_ reason: String)
}

extension DirectSend: DirectControls {}
extension DirectReceive: DirectControls {}
