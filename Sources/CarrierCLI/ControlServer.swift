import AsyncExtras
import CarrierNode
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's side of the control socket (docs/daemon.md). Each
/// connection sends one request line:
/// - `{"op":"run","args":[…],"cwd":DIR}`: runs a command line on the
///   daemon's node; answers with `{"out":LINE}` and `{"err":LINE}` lines and
///   a last `{"exit":CODE}`. `{"op":"stop"}` on the same connection, or
///   closing it, stops the command as Ctrl-C would.
/// - `{"op":"status"}`: one line, the node's identity and friends, and the
///   process's threads, descriptors and memory.
/// - `{"op":"events"}`: the node's events, one JSON object per line (as
///   `carrier listen --json` prints them), until the client closes.
///
/// Threading: one thread blocks in `accept`, and each connection has one
/// thread that blocks reading its lines; the work runs in tasks.
final class ControlServer: Sendable {
    let path: String
    private let listener: Int32
    private let context: DaemonContext
    private let connections = Locked(0)
    /// Clients served at once (each holds a thread while its command runs: a
    /// bot placing a hundred calls at once holds a hundred); more are told to
    /// come back later.
    static let maxConnections = 512

    init(path: String, context: DaemonContext) throws {
        self.path = path
        self.context = context
        listener = try ControlSocket.listen(at: path)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Stops taking clients and removes the socket file (commands running
    /// for clients are stopped by the daemon's node stopping).
    func stop() {
        _ = shutdown(listener, Int32(SHUT_RDWR))
        unlink(path)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break  // shut down
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // not into the processes commands may start
            let connection = ControlConnection(fd: fd)
            // The socket's mode keeps others out; the peer's uid is checked as well,
            // should the mode or the directory's have been loosened.
            guard let uid = Self.peerUid(fd), uid == getuid() else {
                connection.send(["error": "the daemon serves its own user only"])
                connection.close()
                continue
            }
            let admitted = connections.withLock { count in
                guard count < Self.maxConnections else { return false }
                count += 1
                return true
            }
            guard admitted else {
                connection.send(["error": "the daemon serves \(Self.maxConnections) clients at once; try again"])
                connection.close()
                continue
            }
            Thread.detachNewThread { [self] in
                serve(connection)
                connection.close()
                connections.withLock { $0 -= 1 }
            }
        }
        close(listener)
    }

    /// The uid of the process at the other end of a Unix socket (`SO_PEERCRED`).
    static func peerUid(_ fd: Int32) -> uid_t? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc hides it without _GNU_SOURCE).
        var credentials = [UInt32](repeating: 0, count: 3)
        var size = socklen_t(credentials.count * MemoryLayout<UInt32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0, size == 12 else { return nil }
        return uid_t(credentials[1])
    }

    /// Serves one connection on its own thread; returns when it is done with it.
    private func serve(_ connection: ControlConnection) {
        guard let line = connection.readLine(), let request = Self.object(line) else {
            connection.send(["error": "send one JSON object per line, such as {\"op\":\"status\"}"])
            return
        }
        switch request["op"] as? String {
        case "run":
            guard let args = request["args"] as? [String] else {
                connection.send(["error": "run needs \"args\": the command line as a list of strings"])
                return
            }
            run(args, in: request["cwd"] as? String, on: connection)
        case "status":
            let done = DispatchSemaphore(value: 0)
            Task {
                connection.send(await status())
                done.signal()
            }
            done.wait()
        case "events":
            let node = context.node
            let task = Task {
                for await event in await node.events() {
                    guard connection.send(EventFormatter.describe(event).json) else { break }
                }
            }
            while connection.readLine() != nil {}  // until the client closes
            task.cancel()
        case let op:
            connection.send(["error": "unknown op \(op ?? "(none)"); the ops are run, status and events"])
        }
    }

    /// Runs a command line for a client, streaming its output back.
    private func run(_ args: [String], in directory: String?, on connection: ControlConnection) {
        let stop = AsyncLatch()
        let context = context
        let task = Task {
            let code = await Self.runForClient(args, directory: directory, context: context, stop: stop) {
                stream, text in
                connection.send([stream == .stdout ? "out" : "err": text])
            }
            connection.send(["exit": Int(code)])
            connection.shutdownBoth()  // ends the read below
        }
        while let line = connection.readLine() {
            if Self.object(line)?["op"] as? String == "stop" { stop.open() }
        }
        stop.open()  // the client went away: stop the command as its Ctrl-C would
        let done = DispatchSemaphore(value: 0)
        Task {
            await task.value
            done.signal()
        }
        done.wait()
    }

    /// One command line on the daemon's node, as the client's own process would run it.
    static func runForClient(
        _ args: [String], directory: String?, context: DaemonContext, stop: AsyncLatch,
        sink: @escaping @Sendable (Output.Stream, String) -> Void
    ) async -> Int32 {
        let output = Output(json: false, sink: sink)
        let (name, rest) = findCommand(args)
        guard let name, let command = commands.first(where: { $0.name == name }), command.daemonUse == .routed
        else {
            output.log("error: the daemon runs only \(routedNames), not \(args.joined(separator: " "))")
            return 2
        }
        return await runCommand(command, rest, output: output, workingDirectory: directory, inDaemon: true) {
            arguments, global in
            var global = global
            global.daemon = context
            global.loopback = global.loopback || context.network.loopback
            global.udp = global.udp && context.network.udp
            global.bootstrap = context.network.bootstrap
            global.express = context.network.express
            return try await Termination.$request.withValue(stop) { try await command.run(arguments, global) }
        }
    }

    static var routedNames: String {
        commands.filter { $0.daemonUse == .routed }.map { $0.name }.joined(separator: ", ")
    }

    private func status() async -> [String: any Sendable] {
        let node = context.node
        let friends: [[String: any Sendable]] = await node.friendList().map { friend in
            [
                "userId": friend.userId.description, "label": friend.label, "name": friend.info.name,
                "online": friend.connected,
            ]
        }
        return [
            "userId": node.userId.description, "address": await node.address().description, "pid": Int(getpid()),
            "online": await node.online, "friends": friends, "socket": path, "node": await node.reachability().json,
            "process": ProcessResources.snapshot(),
            "limits": Self.limits(node.options).merging(await context.answeringLimits) { $1 },
        ]
    }

    /// The node's limits on what friends and strangers may hold of it (docs/security.md).
    static func limits(_ options: CarrierOptions) -> [String: any Sendable] {
        [
            "maxIncomingFileBytes": Int(clamping: options.maxIncomingFileSize),
            "maxIncomingFiles": Carrier.maxFileTransfers,
            "maxIncomingFilesPerFriend": options.maxIncomingFilesPerFriend,
            "fileStallSeconds": Int(options.fileStallTimeout.components.seconds),
            "partialFilesMaxDays": Int(options.partialFilesMaxAge.components.seconds / 86400),
            "partialFilesMaxBytes": Int(clamping: options.partialFilesMaxBytes),
            "diskReserveBytes": Int(clamping: options.diskReserve),
            "maxMessageBytes": Carrier.maxMessageSize,
        ]
    }

    private static func object(_ line: String) -> [String: Any]? {
        guard let data = line.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }
}
