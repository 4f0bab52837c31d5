import Foundation
import RtcCalls
import RtcPeer

/// A connection to one friend (the reference's CarrierSession), negotiated
/// over the invite channel like a call but without media: ICE, DTLS and SCTP,
/// with streams as data channels. It comes back by itself from network
/// outages (ICE restarts, as calls do) and ends for good when the friend goes.
public actor Session {
    /// Where the session is: `disconnected` while it recovers from an outage.
    public enum State: String, Sendable {
        case connecting, connected, disconnected, closed, failed
    }

    /// The negotiation's id (the call id on the wire).
    public nonisolated let id: String
    /// The friend's user id (or the provider's name for the peer).
    public nonisolated let peer: String
    /// Streams the peer opened, already accepted.
    public nonisolated let incomingStreams: AsyncStream<SessionStream>
    private let streamSink: AsyncStream<SessionStream>.Continuation
    private let client: CallClient
    private let services: ServiceRegistry
    /// The session's state now.
    public private(set) var state = State.connecting
    /// Why the session ended, when it did.
    public private(set) var endDetail: String?
    private var streams: [UInt16: SessionStream] = [:]
    private var connectWaiters: [CheckedContinuation<Void, Never>] = []
    /// Channels of a stream not known yet (their stream's open may come second): a few, briefly.
    private var orphans: [(stream: UInt16, label: ChannelLabel, channel: DataChannel)] = []
    static let maxOrphans = 64

    init(id: String, peer: String, client: CallClient, services: ServiceRegistry) {
        self.id = id
        self.peer = peer
        self.client = client
        self.services = services
        (incomingStreams, streamSink) = AsyncStream<SessionStream>.makeStream(bufferingPolicy: .bufferingNewest(64))
    }

    // MARK: Streams

    /// Opens a stream; returns once the peer accepted it (state `connected`).
    public func openStream(_ options: SessionStream.Options = [.reliable]) async throws(SessionError) -> SessionStream {
        try await waitConnected()
        var options = options
        if options.contains(.portForwarding) {
            guard options.contains(.reliable) else { throw .forwardingNeedsReliable }
            options.insert(.multiplexing)
        }
        let channel = try await open(.stream(options))
        let stream = makeStream(options, channel)
        stream.set(.transportReady)
        stream.set(.connecting)
        try await channel.waitAccepted()
        if let id = stream.id { streams[id] = stream }
        stream.set(state == .disconnected ? .deactivated : .connected)
        adoptOrphans()
        return stream
    }

    /// The connection's statistics now (the ICE pair in use, round-trip time, bytes).
    public func stats() async throws -> PeerStats { try await client.peerStats(id) }

    /// Opens a data channel for an application protocol (one the peer lists in
    /// its `applicationProtocols`; a peer that does not closes it at once).
    public func openChannel(_ parameters: DataChannelParameters) async throws(SessionError) -> DataChannel {
        try await waitConnected()
        guard state == .connected || state == .disconnected else { throw .notConnected(state.rawValue) }
        do { return try await client.openDataChannel(parameters, callId: id) } catch {
            throw .notConnected("\(error)")
        }
    }

    private func makeStream(_ options: SessionStream.Options, _ channel: StreamChannel) -> SessionStream {
        SessionStream(options: options, data: channel) { [weak self] label throws(SessionError) in
            guard let self else { throw .closed }
            return try await self.open(label)
        }
    }

    private func open(_ label: ChannelLabel) async throws(SessionError) -> StreamChannel {
        guard state == .connected || state == .disconnected else { throw .notConnected(state.rawValue) }
        do {
            let channel = try await client.openDataChannel(label.parameters, callId: id)
            let cookie: String =
                switch label {
                case .stream: ""
                case .channel(_, let cookie): cookie
                case .forward(_, let service): service
                }
            return StreamChannel(channel: channel, cookie: cookie, accepted: false)
        } catch {
            throw .notConnected("\(error)")
        }
    }

    /// Ends the session: every stream and channel closes, the peer's too.
    public func close() async {
        endDetail = endDetail ?? "closed here"
        move(to: .closed)
        try? await client.endCall(id)  // fails only for a call already ended: nothing to do
    }

    /// Waits until the session is connected; throws if it ended first.
    public func waitConnected() async throws(SessionError) {
        while true {
            switch state {
            case .connected, .disconnected: return
            case .closed, .failed: throw .ended(endDetail ?? state.rawValue)
            case .connecting: await withCheckedContinuation { connectWaiters.append($0) }
            }
        }
    }

    // MARK: From the manager

    func callChanged(_ call: Call) {
        let new: State =
            switch call.state {
            case .connected: .connected
            case .disconnected: .disconnected
            case .ended: call.endReason == .hangUp || call.endReason == .remoteHangUp ? .closed : .failed
            default: .connecting
            }
        if call.state == .ended {
            endDetail = call.endDetail ?? call.endReason?.rawValue
        }
        move(to: new)
    }

    private func move(to new: State) {
        guard new != state, state != .closed, state != .failed else { return }
        state = new
        for stream in streams.values {
            switch new {
            case .connected: stream.set(.connected)
            case .disconnected: stream.set(.deactivated)
            case .closed: stream.set(.closed)
            case .failed: stream.set(.failed)
            case .connecting: break
            }
        }
        if new != .connecting {
            for waiter in connectWaiters { waiter.resume() }
            connectWaiters = []
        }
        if new == .closed || new == .failed {
            streams = [:]
            orphans = []
            streamSink.finish()
        }
    }

    /// The peer opened a data channel of ours: a stream, or a channel in one.
    func peerOpened(_ channel: DataChannel) {
        guard let label = ChannelLabel(channel.parameters) else { return channel.close() }
        switch label {
        case .stream(let options):
            guard let id = channel.id else { return channel.close() }
            let data = StreamChannel(channel: channel, cookie: "", accepted: true)
            let stream = makeStream(options, data)
            streams[id] = stream
            data.accept()
            stream.set(.transportReady)
            stream.set(.connecting)
            stream.set(state == .disconnected ? .deactivated : .connected)
            streamSink.yield(stream)
            adoptOrphans()
        case .channel(let streamId, _), .forward(let streamId, _):
            guard let stream = streams[streamId] else {
                orphans.append((streamId, label, channel))
                if orphans.count > Self.maxOrphans { orphans.removeFirst().channel.close() }
                return
            }
            serve(channel, label: label, in: stream)
        }
    }

    private func adoptOrphans() {
        let waiting = orphans
        orphans = []
        for orphan in waiting {
            if let stream = streams[orphan.stream] {
                serve(orphan.channel, label: orphan.label, in: stream)
            } else {
                orphans.append(orphan)
            }
        }
    }

    private func serve(_ channel: DataChannel, label: ChannelLabel, in stream: SessionStream) {
        switch label {
        case .stream:
            break
        case .channel(_, let cookie):
            let channel = StreamChannel(channel: channel, cookie: cookie, accepted: true)
            guard stream.options.contains(.multiplexing) else { return channel.refuse("the stream does not multiplex") }
            channel.accept()
            stream.peerOpened(channel)
        case .forward(_, let service):
            let channel = StreamChannel(channel: channel, cookie: service, accepted: true)
            guard stream.options.contains(.portForwarding) else {
                return channel.refuse("the stream does not forward ports")
            }
            let services = services
            let peer = peer
            Task { await services.serve(channel, service: service, for: peer) }
        }
    }
}

/// Why a session, stream or channel operation failed.
public enum SessionError: Error, Equatable, Sendable, CustomStringConvertible {
    case notAFriend(String)
    case notConnected(String)
    case ended(String)
    case refused(String)
    case reset(String)
    case closed
    /// Written after `finish()`.
    case finished
    case notMultiplexing
    case notPortForwarding
    case forwardingNeedsReliable
    case listen(String)

    /// The peer's words for a refusal or reset; the description otherwise.
    public var reason: String {
        switch self {
        case .refused(let why), .reset(let why): why
        default: description
        }
    }

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .notAFriend(let peer): "\(peer) is not a friend: sessions are between friends only"
        case .notConnected(let why): "the session is not connected (\(why))"
        case .ended(let why): "the session ended: \(why)"
        case .refused(let why): "refused: \(why)"
        case .reset(let why): "reset: \(why)"
        case .closed: "closed"
        case .finished: "this side already finished writing"
        case .notMultiplexing: "the stream has no channels (open it with .multiplexing)"
        case .notPortForwarding: "the stream does not forward ports (open it with .portForwarding)"
        case .forwardingNeedsReliable: "port forwarding needs a reliable stream"
        case .listen(let why): why
        }
    }
}
