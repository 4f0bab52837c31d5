import Foundation

/// A local TCP port forwarded to a friend's service over a session stream
/// (`carrier forward FRIEND SERVICE --listen HOST:PORT`): every connection
/// accepted here becomes a channel, which the friend's node connects to the
/// service. A connection the friend refuses (an unknown service, one it may
/// not use, one that is down) is reset, and the reason is reported.
public final class PortForwarding: Sendable {
    /// What happens to the connections made to the forwarded port.
    public enum Event: Sendable, Equatable {
        /// A connection reached the service.
        case opened(connection: Int)
        /// A connection ended: bytes sent to the service and received from it,
        /// and why it was cut, if it was.
        case closed(connection: Int, sent: Int, received: Int, error: String?)
        /// The friend refused a connection (it was reset).
        case refused(connection: Int, reason: String)
    }

    /// The friend's service that connections reach.
    public let service: String
    /// The local address connections are accepted on.
    public let host: String
    /// The local port (the one asked for, or the free one picked for port 0).
    public let port: UInt16
    /// One event per connection opened, refused or ended.
    public let events: AsyncStream<Event>
    private let sink: AsyncStream<Event>.Continuation
    private let listener: TcpSocket
    private let acceptor: Task<Void, Never>
    /// Connections accepted and not yet refused or ended.
    private let active = ActiveCount()

    init(stream: SessionStream, service: String, host: String, port: UInt16) throws(SessionError) {
        do { listener = try TcpSocket.listen(host: host, port: port) } catch {
            throw .listen("cannot forward \(host):\(port): \(error)")
        }
        self.service = service
        self.host = host
        self.port = listener.localPort
        let (events, sink) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        self.events = events
        self.sink = sink
        let listener = listener
        let active = active
        acceptor = Task { [weak stream] in
            var number = 0
            while let socket = try? await listener.accept() {
                number += 1
                let connection = number
                guard let stream else {
                    socket.reset()
                    break
                }
                active.change(1)
                Task {
                    defer { active.change(-1) }
                    let channel: StreamChannel
                    do throws(SessionError) {
                        channel = try await stream.openForwardedConnection(service: service)
                    } catch {
                        socket.reset()
                        let reason = error.reason
                        sink.yield(.refused(connection: connection, reason: reason))
                        return
                    }
                    sink.yield(.opened(connection: connection))
                    let outcome = await TcpBridge.run(socket, channel)
                    sink.yield(
                        .closed(
                            connection: connection, sent: outcome.sent, received: outcome.received,
                            error: outcome.reset))
                }
            }
            sink.finish()
        }
    }

    deinit { close() }

    /// Connections open now.
    public var activeConnections: Int { active.value }

    /// Stops accepting connections (those open go on until they end or the session does).
    public func close() {
        listener.close()
        acceptor.cancel()
    }
}

/// A counter shared by the acceptor's tasks.
final class ActiveCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func change(_ delta: Int) { lock.withLock { count += delta } }
    var value: Int { lock.withLock { count } }
}
