/// One `carrier` subcommand.
protocol Command {
    static var name: String { get }
    static var summary: String { get }
    /// Full help: usage line, description, the command's options.
    static var help: String { get }
    static var valued: Set<String> { get }
    static var flags: Set<String> { get }
    /// Returns the exit code.
    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32
}

extension Command {
    static var valued: Set<String> { [] }
    static var flags: Set<String> { [] }
}

/// Every command, in the order `carrier --help` lists them.
var commands: [any Command.Type] {
    [
        IdCommand.self, ProfileCommand.self, SignCommand.self, VerifyCommand.self, NodeCommand.self,
        ExpressCommand.self, ListenCommand.self, FriendCommand.self, MessageCommand.self, InviteCommand.self,
        GroupCommand.self,
        SendFileCommand.self, CallCommand.self, SessionCommand.self, ForwardCommand.self, RtcCommand.self,
        DemoCommand.self,
    ]
}
