import CarrierFiles
import CarrierNode
import CarrierSessions
import CarrierSignaling
import Foundation
import RtcCalls
import RtcFileTransfer

struct NodeCommand: Command {
    static let name = "node"
    static let summary = "run a bootstrap node (DHT + TCP relay) and print its host:port:key"
    static let help = """
        Usage: carrier node [--host 127.0.0.1] [--port N] [--dht-nodes N]

        Runs a bootstrap node for a private network until Ctrl-C. Prints one line,
        HOST:PORT:KEY (key in base58), to pass to other commands as --bootstrap.
        It serves the DHT over UDP and a TCP relay on the same port. Its key is new
        on every start (toxcore's API cannot keep it): for a bootstrap node whose
        key survives restarts, run c-toxcore's tox-bootstrapd (Debian: toxcore-utils)
        and pass its HOST:PORT:HEXKEY.

        It also runs more DHT nodes beside it, in the same process, on ports of their
        own: toxcore counts itself online only while half the nodes it announces to
        (up to 12) answer, and once a node has met 12 others it needs 6 of them alive.
        On a small network whose peers come and go (callers that are new processes),
        the dead ones drop out after about a minute and every node would go off the
        network and stop looking for its friends; the extra nodes keep 6 alive.
        On a small network the onion also never settles: with 8 nodes here and two
        members, each member sent 80-130 kbit/s of onion traffic, in bursts that
        filled a slow uplink's queue once a second (76 with 12); with 16, 7-34.

          --host HOST      the address others reach it at (printed; toxcore listens on all)
          --port N         UDP and TCP port (default: a free one)
          --dht-nodes N    DHT nodes in all, this one included (default 16; 1 for one)
        """
    static let valued: Set<String> = ["--host", "--port", "--dht-nodes"]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        _ = try arguments.positionals(0...0, usage: "carrier node [--host HOST] [--port N]")
        let host = arguments.value("--host") ?? "127.0.0.1"
        guard let port = try arguments.port("--port") ?? PortProbe.freePort() else {
            throw CarrierError.invalidArgument("no free port found; pass --port")
        }
        var options = CarrierOptions(dataDirectory: nil, bootstrapNodes: global.bootstrap)
        options.udpPorts = port...port
        options.tcpRelayPort = port
        options.loopbackOnly = global.loopback || host == "127.0.0.1"
        options.carrierFraming = global.carrierFraming
        let count = try arguments.integer("--dht-nodes", in: 1...64) ?? 16
        let node = try Carrier(options: options)
        try await node.start()
        let entry = BootstrapNode(host: host, port: port, publicKey: await node.dhtKey())
        let helpers = try DhtHelpers(
            count: count - 1, bootstrap: [entry] + global.bootstrap, loopbackOnly: options.loopbackOnly,
            carrierFraming: global.carrierFraming)
        await helpers.start()
        global.output.result(entry.description, ["bootstrap": entry.description])
        global.output.log(
            "bootstrap node running on port \(port)"
                + (count > 1 ? " with \(count - 1) more DHT nodes beside it" : "") + "; Ctrl-C to stop")
        await Termination.wait()
        await helpers.stop()
        await node.stop()
        return 0
    }
}

struct ListenCommand: Command {
    static let name = "listen"
    static let daemonUse = DaemonUse.exclusive
    static let summary = "go online and print every event until Ctrl-C"
    static let help = """
        Usage: carrier listen [--accept-friends] [--receive-dir DIR [--toxcore-files]] [--answer [call options]]
                              [--sessions [--echo]] [--service NAME=HOST:PORT[@USERID,…]]…

        Goes online and prints each event (friend requests, connections, messages,
        invites, receipts, groups, files) as a line, or a JSON object per line with
        --json. Invites are answered with status 0 so their senders do not wait for
        a timeout.

          --accept-friends     accept every friend request
          --receive-dir DIR    accept files friends send (`carrier send-file`, and over
                               a call's data channel) into DIR; a cut transfer resumes
                               from DIR/.carrier-partial/, no file is overwritten. Files
                               come over a direct session when the sender's node opens
                               one (events with "via": "direct"), over toxcore otherwise
            --toxcore-files    take files over toxcore only, as a node without the
                               direct path does
            --max-files-per-friend N
                               files one friend may have under way at once (default 8,
                               of 64 for all); a file with nothing arriving for 10
                               minutes ends, its bytes kept for a resume (partial files
                               kept 7 days and 4 GiB at most)
          --answer             answer friends' calls (several at once), with:
            --record DIR       record each call into DIR/CALLID/ (audio.wav, video.ivf, …);
                               --record NAME.webm: each call into NAME-CALLID.webm
            --record-formats F which of wav,opus,ivf,y4m to write (default all)
            --media FILE       send the audio and video of FILE back (any file ffmpeg reads)
            --audio FILE       send this audio back (any file with an audio track)
            --video FILE       send this video back (any file with a video track, .y4m, .ivf)
            --start S          start S seconds into the media files
            --loop             play the media files again at their end
            --recovery S       restart ICE for up to S seconds when a call's connection
                               is lost, then end it as failed (default 30)
          --sessions           accept friends' sessions (`carrier session`); each stream's
                               data is saved as DIR/session-ID-STREAM.bin with --receive-dir,
                               and reported with its size and SHA-256
            --echo             send each stream's data back as well
        \(StreamLimits.help)
          --max-calls N        calls and sessions under way at most (default 32); more are
                               refused as busy
          --max-calls-per-friend N
                               of those, with one friend at most (default 4)
          --service NAME=HOST:PORT[@USERID,…]
                               offer the TCP service at HOST:PORT to friends as NAME
                               (`carrier forward`), to the listed friends only if given;
                               repeatable; implies --sessions
        For the calls and sessions it answers:
          --host-ip IP           gather ICE candidates on IP only (127.0.0.1 for local tests)
        \(IceServerOptions.help)
        It also serves the control socket DIR/carrier.sock, as `carrier daemon` does:
        commands on this data directory then run on this node.
        Call events print as lines (JSON objects with "event": "call…" under --json);
        each ended call prints a summary. Session events: sessionOpened,
        sessionStream, sessionEnded, serviceConnection.
        """
    static let flags: Set<String> = [
        "--accept-friends", "--answer", "--loop", "--sessions", "--echo", "--toxcore-files",
    ]
    static let valued: Set<String> = Set([
        "--record", "--record-formats", "--receive-dir", "--audio", "--video", "--host-ip", "--recovery", "--media",
        "--start", "--service", "--max-calls", "--max-calls-per-friend", "--max-files-per-friend",
    ]).union(IceServerOptions.valued).union(StreamLimits.valued)

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        try await serve(arguments, global, asDaemon: false)
    }

    /// `listen` and `daemon`: the node online until Ctrl-C, answering what
    /// the options say, and the control socket other commands on this data
    /// directory use. The daemon prints its events only on the socket.
    static func serve(_ arguments: Arguments, _ global: GlobalOptions, asDaemon: Bool) async throws -> Int32 {
        let name = asDaemon ? "daemon" : "listen"
        _ = try arguments.positionals(0...0, usage: "carrier \(name) [--accept-friends] [--answer …]")
        let acceptFriends = arguments.flag("--accept-friends")
        let receiveDirectory = arguments.value("--receive-dir")
        let answer = arguments.flag("--answer")
        let media = try CallOptions.media(arguments)
        let configuration = try CallOptions.client(arguments, global)
        let services = try arguments.all("--service").map(ServiceSpec.parse)
        let sessions = arguments.flag("--sessions") || !services.isEmpty
        var sessionConfiguration = try SessionOptions.configuration(arguments, global)
        let streamLimits = try StreamLimits.parse(arguments, configured: global.limits)
        let maxCalls = try arguments.integer("--max-calls", in: 1...10_000) ?? global.limits.maxCalls ?? 32
        let maxCallsPerFriend =
            try arguments.integer("--max-calls-per-friend", in: 1...10_000) ?? global.limits.maxCallsPerFriend ?? 4
        sessionConfiguration.maxSessions = maxCalls
        sessionConfiguration.maxSessionsPerPeer = maxCallsPerFriend
        // Files come over a session when the sender's node opens one (refused over it without --receive-dir).
        let directFiles = (receiveDirectory != nil || sessions) && !arguments.flag("--toxcore-files")
        if directFiles { sessionConfiguration.applicationProtocols.insert(FriendFileMessage.protocolName) }
        var nodeOptions = global.nodeOptions()
        nodeOptions.diskReserve = streamLimits.diskReserve
        if let files = try arguments.integer("--max-files-per-friend", in: 1...64) ?? global.limits.maxFilesPerFriend {
            nodeOptions.maxIncomingFilesPerFriend = files
        }
        return try await global.withOnlineNode(nodeOptions) { node in
            let context = DaemonContext(node: node, network: global)
            await context.setAnsweringLimits([
                "maxCalls": maxCalls, "maxCallsPerFriend": maxCallsPerFriend,
                "maxStreamBytes": Int(clamping: streamLimits.maxBytes),
            ])
            let control: ControlServer?
            do {
                control = try ControlServer(path: ControlSocket.path(for: global.dataDirectory), context: context)
            } catch {
                // listen goes on without it (other commands then start their own node); the daemon is the socket.
                guard !asDaemon else { throw error }
                global.output.log("warning: no control socket: \(error)")
                control = nil
            }
            var sessionListener: SessionListener?
            var manager: SessionManager?
            if sessions || receiveDirectory != nil {
                let tap = try await context.signaling(SessionManager.extensionName).tap(answering: true)
                manager = await SessionManager.start(on: node, signaling: tap, configuration: sessionConfiguration)
            }
            if sessions, let manager {
                sessionListener = await SessionListener(
                    manager: manager,
                    services: services, receiveDirectory: receiveDirectory, echo: arguments.flag("--echo"),
                    limits: streamLimits, output: global.output)
            }
            var filesConfiguration = FriendFiles.Configuration()
            // Files from Carrier apps come as messages: kept beside the others.
            filesConfiguration.messageFilesDirectory = receiveDirectory
            let files = FriendFiles(node: node, sessions: manager, configuration: filesConfiguration)
            await files.start()
            let fileEvents = await files.events()
            var answering: CallAnswerer?
            if answer {
                let provider = try await context.signaling(CarrierSignalingProvider.extensionName).tap(answering: true)
                var clientConfiguration = configuration
                clientConfiguration.mayCall = GlobalOptions.friendsOnly(node)
                clientConfiguration.maxCalls = maxCalls
                clientConfiguration.maxCallsPerPeer = maxCallsPerFriend
                let client = CallClient(provider: provider, configuration: clientConfiguration)
                await client.start()
                answering = CallAnswerer(client: client, media: media, output: global.output)
                await answering?.start()
            }
            let events = await node.events()
            let output = global.output
            output.log("listening as \(node.userId) (address \(await node.address())); Ctrl-C to stop")
            if let control {
                if asDaemon {
                    output.result(
                        "daemon running; control socket \(control.path)",
                        ["event": "daemonReady", "socket": control.path, "userId": node.userId.description])
                } else {
                    output.log("control socket \(control.path): commands on this data directory run here")
                }
            }
            let printer = Task {
                for await event in events {
                    let (text, json) = EventFormatter.describe(event)
                    if !asDaemon {
                        if case .file = event {
                            output.event(text, json.merging(["via": "toxcore"]) { a, _ in a })
                        } else {
                            output.event(text, json)
                        }
                    }
                    switch event {
                    case .friendRequest(let from, _, _, _) where acceptFriends:
                        do { try await node.acceptFriend(from) } catch { output.log("cannot accept \(from): \(error)") }
                    case .inviteRequest(let invite):
                        // Carrier wants data in a reply that accepts: "ok".
                        try? await node.replyInvite(invite, status: 0, data: Array("ok".utf8))
                    default: break
                    }
                }
            }
            // Files on both paths: toxcore's events are printed above, the direct path's here.
            let fileTaker = Task {
                for await event in fileEvents {
                    if event.path != .toxcore, !asDaemon {
                        let (text, json) = EventFormatter.describe(event.event)
                        let via = event.path.rawValue
                        output.event(text + " (\(via))", json.merging(["via": via]) { a, _ in a })
                    }
                    guard case .offered(let offer) = event.event else { continue }
                    do {
                        if let receiveDirectory {
                            try await files.accept(offer.key, into: receiveDirectory)
                        } else {
                            try await files.refuse(offer.key, reason: "this node takes no files")
                        }
                    } catch {
                        output.log("cannot take \(offer.name): \(error)")
                        try? await files.refuse(offer.key, reason: "\(error)")
                    }
                }
            }
            await Termination.wait()
            output.log("stopping")
            control?.stop()
            await answering?.stop()
            await sessionListener?.stop()
            await files.stop()
            if sessionListener == nil { await manager?.stop() }
            await context.stop()
            await node.stop()
            await printer.value
            await fileTaker.value
            return 0
        }
    }
}
