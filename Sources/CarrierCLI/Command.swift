/// One `carrier` subcommand.
protocol Command {
    static var name: String { get }
    static var summary: String { get }
    /// Full help: usage line, description, the command's options.
    static var help: String { get }
    static var valued: Set<String> { get }
    static var flags: Set<String> { get }
    /// How the command goes with a daemon on its data directory.
    static var daemonUse: DaemonUse { get }
    /// Returns the exit code.
    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32
}

extension Command {
    static var valued: Set<String> { [] }
    static var flags: Set<String> { [] }
    static var daemonUse: DaemonUse { .independent }
}

/// How a command relates to a daemon (`carrier daemon` or `carrier listen`)
/// running on its data directory.
enum DaemonUse {
    /// Needs no node of this identity (or only reads its saved identity).
    case independent
    /// Runs inside the daemon, on its node, when one runs; on a node of its own otherwise.
    case routed
    /// Runs a node of this identity itself: refused while a daemon runs (two
    /// nodes of one identity would fight over its friends' connections).
    case exclusive
}

/// Every command, in the order `carrier --help` lists them.
var commands: [any Command.Type] {
    [
        IdCommand.self, ProfileCommand.self, SignCommand.self, VerifyCommand.self, NodeCommand.self,
        ExpressCommand.self, ListenCommand.self, FriendCommand.self, MessageCommand.self, InviteCommand.self,
        GroupCommand.self,
        SendFileCommand.self, CallCommand.self, SessionCommand.self, ForwardCommand.self, RtcCommand.self,
        DaemonCommand.self, DemoCommand.self,
    ]
}
