/// `carrier daemon`: a node that stays online for the other commands.
struct DaemonCommand: Command {
    static let name = "daemon"
    static let daemonUse = DaemonUse.exclusive
    static let summary = "keep the node online and run other commands on it (control socket)"
    static let help = """
        Usage: carrier daemon [listen options]

        Goes online and stays there until Ctrl-C, serving a control socket in the
        data directory (DIR/carrier.sock, owner only). While it runs, `carrier
        friend`, `message`, `invite`, `profile`, `sign`, `send-file`, `call` and
        `forward` on the same --data run inside it, on its node that is online
        already, and start their work within milliseconds instead of joining the
        network first; their output and exit code are the same. Ctrl-C on such a
        command stops it in the daemon. `listen`, `session` and `group` run a node
        of their own and refuse to start while a daemon runs on their --data.

        Takes the options of `carrier listen` (--accept-friends, --receive-dir,
        --answer with its call options, --sessions, --service) and does what they
        say; it prints one line when ready (with --json: {"event":"daemonReady",
        "socket":…,"userId":…}) and its node's events only on the socket.
        `carrier listen` serves the same socket and prints every event too.

        The socket speaks JSON lines (docs/daemon.md): {"op":"run","args":[…],
        "cwd":…} runs a command line; {"op":"status"} returns the node's
        identity and friends, and the process's threads, descriptors and memory;
        {"op":"events"} streams the node's events.
        """
    static let valued = ListenCommand.valued
    static let flags = ListenCommand.flags

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        try await ListenCommand.serve(arguments, global, asDaemon: true)
    }
}
