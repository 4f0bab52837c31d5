import Foundation
import RtcPeer

/// A stream of a session (the reference's CarrierStream): bytes both ways on
/// a data channel of its own, reliable and ordered or not, and, when it
/// multiplexes, channels inside it and forwarded TCP connections, each a
/// further data channel. Its state follows the reference's stream states.
public final class SessionStream: @unchecked Sendable {
    /// What a stream is (the reference's CarrierStreamOptions that still mean something here).
    public struct Options: OptionSet, Sendable, Hashable {
        /// The bits, with the reference's values (reliable 0x04, multiplexing 0x08, port forwarding 0x10).
        public let rawValue: Int
        /// Options from their bits.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Ordered and retransmitted (else: unordered, no retransmission, oldest dropped).
        public static let reliable = Options(rawValue: 1 << 2)
        /// Channels inside the stream (`openChannel`).
        public static let multiplexing = Options(rawValue: 1 << 3)
        /// TCP port forwarding (implies multiplexing, needs reliable).
        public static let portForwarding = Options(rawValue: 1 << 4)

        var label: String {
            [
                (Self.reliable, "reliable"), (.multiplexing, "multiplexing"), (.portForwarding, "portforwarding"),
            ].filter { contains($0.0) }.map(\.1).joined(separator: ",")
        }

        init(label: String) {
            var options: Options = []
            for word in label.split(separator: ",").prefix(8) {
                switch word {
                case "reliable": options.insert(.reliable)
                case "multiplexing": options.insert(.multiplexing)
                case "portforwarding": options.formUnion([.portForwarding, .multiplexing])
                default: break
                }
            }
            self = options
        }
    }

    /// The reference's CarrierStreamState.
    public enum State: String, Sendable {
        case initialized, transportReady, connecting, connected, deactivated, closed, failed
    }

    /// The stream's options (port forwarding implies multiplexing).
    public let options: Options
    /// The stream's own bytes (`write`, `read`, `finish` go to it).
    public let data: StreamChannel
    /// Channels the peer opened inside this stream (multiplexing streams).
    public let channels: AsyncStream<StreamChannel>
    /// Every state the stream goes through, in order.
    public let states: AsyncStream<State>
    private let channelSink: AsyncStream<StreamChannel>.Continuation
    private let stateSink: AsyncStream<State>.Continuation
    private let lock = NSLock()
    private var current = State.initialized
    /// Who opens channels for us (the session), and serves forwarded connections.
    private let opener: @Sendable (ChannelLabel) async throws(SessionError) -> StreamChannel
    private var watcher: Task<Void, Never>?

    init(
        options: Options, data: StreamChannel,
        opener: @escaping @Sendable (ChannelLabel) async throws(SessionError) -> StreamChannel
    ) {
        var options = options
        if options.contains(.portForwarding) { options.insert(.multiplexing) }
        self.options = options
        self.data = data
        self.opener = opener
        (channels, channelSink) = AsyncStream<StreamChannel>.makeStream(bufferingPolicy: .bufferingNewest(256))
        (states, stateSink) = AsyncStream<State>.makeStream(bufferingPolicy: .bufferingNewest(64))
        stateSink.yield(.initialized)
        watcher = Task { [weak self, events = data.events] in
            for await event in events {
                // A channel lost with the connection: the session says whether it closed or failed.
                guard case .closed(let reset) = event, reset != StreamChannel.connectionLost else { continue }
                self?.set(reset == nil ? .closed : .failed)
            }
        }
    }

    deinit { watcher?.cancel() }

    /// The SCTP stream id of the stream's data channel: its id in the session.
    public var id: UInt16? { data.id }
    /// The stream's state now (every change is also on `states`).
    public var state: State { lock.withLock { current } }

    // MARK: Data

    /// Writes bytes; waits while the peer pends or the send buffer is full.
    public func write(_ bytes: [UInt8]) async throws(SessionError) { try await data.write(bytes) }
    /// The next bytes; nil at the peer's end of data.
    public func read() async throws(SessionError) -> [UInt8]? { try await data.read() }
    /// No more data from us.
    public func finish() { data.finish() }
    /// Closes the stream at once (`finish()` first for an orderly end).
    public func close() { data.close() }

    // MARK: Channels

    /// Opens a channel inside this stream; the peer sees it on its stream's `channels`.
    public func openChannel(cookie: String = "") async throws(SessionError) -> StreamChannel {
        guard options.contains(.multiplexing) else { throw .notMultiplexing }
        guard let id else { throw .closed }
        let channel = try await opener(.channel(stream: id, cookie: cookie))
        try await channel.waitAccepted()
        return channel
    }

    /// Opens a connection to the peer's service (a port-forwarding stream):
    /// returns once the peer's side connected to the service.
    func openForwardedConnection(service: String) async throws(SessionError) -> StreamChannel {
        guard options.contains(.portForwarding) else { throw .notPortForwarding }
        guard let id else { throw .closed }
        let channel = try await opener(.forward(stream: id, service: service))
        try await channel.waitAccepted()
        return channel
    }

    /// Forwards a local TCP port to a service the peer offers
    /// (`SessionManager.addService` on its side): every connection to
    /// `host:port` becomes a channel to the service. Port 0 picks a free one.
    public func openPortForwarding(service: String, host: String = "127.0.0.1", port: UInt16 = 0)
        throws(SessionError) -> PortForwarding
    {
        guard options.contains(.portForwarding) else { throw .notPortForwarding }
        return try PortForwarding(stream: self, service: service, host: host, port: port)
    }

    // MARK: From the session

    func set(_ state: State) {
        let changed = lock.withLock { () -> Bool in
            guard current != state, current != .closed, current != .failed else { return false }
            current = state
            return true
        }
        guard changed else { return }
        stateSink.yield(state)
        if state == .closed || state == .failed {
            stateSink.finish()
            channelSink.finish()
            data.close()
        }
    }

    func peerOpened(_ channel: StreamChannel) { channelSink.yield(channel) }
}
