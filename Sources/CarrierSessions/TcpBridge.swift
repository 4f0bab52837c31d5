/// Carries one TCP connection over one channel, both ways, until both ends
/// are done: a half-close on either side becomes the other's end of data,
/// and a reset or a lost channel resets the TCP connection (so the program
/// on it sees a failure, not a short but clean stream).
enum TcpBridge {
    struct Outcome: Sendable {
        /// Bytes from the TCP connection onto the channel, and back.
        var sent = 0
        var received = 0
        /// Why it ended abnormally, if it did.
        var reset: String?
    }

    static func run(_ socket: TcpSocket, _ channel: StreamChannel) async -> Outcome {
        async let up = copyUp(socket, channel)
        async let down = copyDown(channel, socket)
        let (sent, received) = await (up, down)
        socket.close()
        return Outcome(sent: sent.bytes, received: received.bytes, reset: sent.reset ?? received.reset)
    }

    /// TCP to the channel; the TCP end of stream finishes the channel.
    private static func copyUp(_ socket: TcpSocket, _ channel: StreamChannel) async -> (bytes: Int, reset: String?) {
        var total = 0
        do {
            while true {
                let bytes = try await socket.read()
                if bytes.isEmpty {
                    channel.finish()
                    return (total, nil)
                }
                total += bytes.count
                try await channel.write(bytes)
            }
        } catch {
            return (total, failed(error, socket, channel))
        }
    }

    /// The channel to TCP; the channel's end of data half-closes the TCP connection.
    private static func copyDown(_ channel: StreamChannel, _ socket: TcpSocket) async -> (bytes: Int, reset: String?) {
        var total = 0
        do {
            while let bytes = try await channel.read() {
                total += bytes.count
                try await socket.write(bytes)
            }
            socket.shutdownWrite()
            return (total, nil)
        } catch {
            return (total, failed(error, socket, channel))
        }
    }

    /// One direction failed: a failed TCP connection resets the channel, a
    /// failed channel resets the TCP connection. Our own close of the socket
    /// (the other direction failed first) is no news. Returns why, if anything went wrong.
    private static func failed(_ error: any Error, _ socket: TcpSocket, _ channel: StreamChannel) -> String? {
        guard let failure = error as? TcpSocket.Failure else {
            socket.reset()
            return "\(error)"
        }
        guard failure != .closed else { return nil }
        channel.reset("the TCP connection failed: \(failure)")
        return "\(failure)"
    }
}
