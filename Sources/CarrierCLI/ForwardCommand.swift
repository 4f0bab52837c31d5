import CarrierNode
import CarrierSessions
import CarrierSignaling
import Foundation

struct ForwardCommand: Command {
    static let name = "forward"
    static let daemonUse = DaemonUse.routed
    static let summary = "forward a local TCP port to a service a friend offers"
    static let help = """
        Usage: carrier forward USERID SERVICE [--listen HOST:PORT] [options]

        Goes online, opens a session with the friend and listens on HOST:PORT
        (default 127.0.0.1 and a free port, printed). Every TCP connection made to
        it is carried to the friend's service SERVICE, which the friend offers
        with `carrier listen --service SERVICE=HOST:PORT`. Half-closes and resets
        cross; a connection the friend refuses (no such service, not allowed, the
        service is down) is reset and the reason printed. Runs until Ctrl-C, or
        until the session ends (exit 1, with the reason).

          --listen HOST:PORT     where to accept connections (default 127.0.0.1:0)
        \(SessionOptions.help)
        Prints `forwarding HOST:PORT to USERID's SERVICE` once listening, then a
        line per connection (JSON objects with --json: event forwarding,
        connectionOpened, connectionClosed, connectionRefused).
        """
    static let valued = SessionOptions.valued.union(["--listen"])

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let positionals = try arguments.positionals(2...2, usage: "carrier forward USERID SERVICE [--listen HOST:PORT]")
        guard let friend = UserId(positionals[0]) else { throw CarrierError.invalidUserId(positionals[0]) }
        let service = positionals[1]
        let listen = arguments.value("--listen") ?? "127.0.0.1:0"
        let (host, port): (String, UInt16)
        do { (host, port) = try ServiceSpec.address(listen) } catch { throw UsageError("--listen: \(error)") }
        let wait = try arguments.seconds("--wait", default: 60)
        let configuration = try SessionOptions.configuration(arguments, global)
        let output = global.output
        return try await global.withOnlineNode { node in
            guard try await global.waitForFriend(friend, on: node, timeout: wait) else { return 1 }
            let manager = try await global.sessionManager(on: node, configuration: configuration)
            let session: Session
            let forwarding: PortForwarding
            do {
                session = try await manager.openSession(to: friend.description)
                let stream = try await session.openStream([.reliable, .portForwarding])
                forwarding = try stream.openPortForwarding(service: service, host: host, port: port)
            } catch {
                output.log("error: cannot forward to \(friend)'s \(service): \(error)")
                await manager.stop()
                return 1
            }
            output.result(
                "forwarding \(host):\(forwarding.port) to \(friend)'s \(service)",
                [
                    "event": "forwarding", "host": host, "port": Int(forwarding.port), "service": service,
                    "peer": friend.description,
                ])
            let printer = Task { for await event in forwarding.events { report(event, output) } }
            // Whichever comes first: the session ends (its reason), or Ctrl-C (nil).
            let (outcome, decide) = AsyncStream<String?>.makeStream()
            let ended = Task {
                for await _ in session.incomingStreams {}  // finishes when the session ends
                decide.yield(await session.endDetail ?? "ended")
            }
            let stopped = Task {
                await Termination.wait()
                decide.yield(nil)
            }
            var why: String?
            for await first in outcome {
                why = first
                break
            }
            ended.cancel()
            stopped.cancel()
            forwarding.close()
            printer.cancel()
            await manager.stop()
            if let why {
                output.log("error: the session with \(friend) ended: \(why)")
                return 1
            }
            return 0
        }
    }

    static func report(_ event: PortForwarding.Event, _ output: Output) {
        switch event {
        case .opened(let connection):
            output.result(
                "connection \(connection) opened", ["event": "connectionOpened", "connection": connection])
        case .closed(let connection, let sent, let received, let error):
            output.result(
                "connection \(connection) closed: \(sent) bytes sent, \(received) received"
                    + (error.map { "; \($0)" } ?? ""),
                [
                    "event": "connectionClosed", "connection": connection, "bytesSent": sent, "bytesReceived": received,
                    "error": error ?? "",
                ])
        case .refused(let connection, let reason):
            output.result(
                "connection \(connection) refused: \(reason)",
                ["event": "connectionRefused", "connection": connection, "reason": reason])
        }
    }
}

/// `NAME=HOST:PORT[@USERID,USERID…]` for `listen --service`, and `HOST:PORT`.
enum ServiceSpec {
    static func parse(_ text: String) throws -> ServiceRegistry.Service {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
            throw UsageError("--service takes NAME=HOST:PORT[@USERID,…], not \(text)")
        }
        let name = String(text[..<equals])
        var rest = String(text[text.index(after: equals)...])
        var allowed: Set<String>?
        if let at = rest.firstIndex(of: "@") {
            let ids = rest[rest.index(after: at)...].split(separator: ",").map(String.init)
            for id in ids where UserId(id) == nil { throw CarrierError.invalidUserId(id) }
            allowed = Set(ids)
            rest = String(rest[..<at])
        }
        let (host, port) = try address(rest)
        guard port != 0 else { throw UsageError("--service \(name): port 0 is no service") }
        return ServiceRegistry.Service(name: name, host: host, port: port, allowed: allowed)
    }

    static func address(_ text: String) throws -> (String, UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw UsageError("expected HOST:PORT (an IPv4 address and a port), not \(text)")
        }
        let host = String(text[..<colon])
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else {
            throw UsageError("expected an IPv4 address in \(text)")
        }
        return (host, port)
    }
}
