import CShim
import CarrierNode
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `carrier`: a headless node on the Carrier-style P2P network, and its call stack.
/// Exit codes: 0 success, 1 failure (the error is on stderr), 2 usage error.
let topHelp = """
    carrier: a headless peer-to-peer node (toxcore) and WebRTC call stack: identity,
    friends, messages, invites, calls with media and files, sessions and port
    forwarding between friends, and WebRTC with any peer (aiortc, browsers).

    Usage: carrier [global options] COMMAND [options]

    Commands:
    \(commands.map { "  " + $0.name.padding(toLength: 10, withPad: " ", startingAt: 0) + $0.summary }.joined(separator: "\n"))

    \(GlobalOptions.help)

    Run `carrier COMMAND --help` for a command's options, `carrier --version` for the
    version. A quick tour: `carrier demo`.
    """

func findCommand(_ raw: [String]) -> (name: String?, rest: [String]) {
    var index = 0
    while index < raw.count {
        let argument = raw[index]
        if GlobalOptions.valued.contains(argument) {
            index += 2
            continue
        }
        if argument.hasPrefix("-") {
            index += 1
            continue
        }
        var rest = raw
        rest.remove(at: index)
        return (argument, rest)
    }
    return (nil, raw)
}

/// The version `carrier --version` prints.
let carrierVersion = "0.4.0"

func runCLI(_ raw: [String]) async -> Int32 {
    if raw == ["--version"] || raw == ["version"] {
        print("carrier \(carrierVersion) (carrier-rtc: toxcore node, Express, WebRTC calls)")
        return 0
    }
    var (name, rest) = findCommand(raw)
    if name == "help" {
        (name, rest) = findCommand(rest)
        rest.append("--help")
    }
    guard let name else {
        print(topHelp)
        return raw.contains("--help") || raw.contains("-h") ? 0 : 2
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        FileHandle.standardError.write(Data("error: unknown command \(name)\n\n\(topHelp)\n".utf8))
        return 2
    }
    return await runCommand(command, rest, output: Output(json: false)) { arguments, global in
        // A daemon on this data directory runs the command on its node, which is online already.
        if command.daemonUse != .independent,
            let fd = ControlSocket.connect(to: ControlSocket.path(for: global.dataDirectory))
        {
            guard command.daemonUse == .routed else {
                close(fd)
                throw CarrierError.invalidArgument(
                    "a daemon runs on \(global.dataDirectory) (its control socket answers), and `carrier \(name)` "
                        + "runs a node of the same identity: stop the daemon, or use another --data")
            }
            return await DaemonClient.run(ControlConnection(fd: fd), raw)
        }
        return try await command.run(arguments, global)
    }
}

/// Parses `rest` for `command` and runs `body`, turning errors into
/// messages on `output` and exit codes (2 for usage, 1 otherwise). Shared by
/// the command line and the daemon, which runs commands for its clients.
func runCommand(
    _ command: any Command.Type, _ rest: [String], output: Output, workingDirectory: String? = nil,
    inDaemon: Bool = false, _ body: (Arguments, GlobalOptions) async throws -> Int32
) async -> Int32 {
    do {
        let arguments = try Arguments(
            rest, valued: GlobalOptions.valued.union(command.valued), flags: GlobalOptions.flags.union(command.flags),
            workingDirectory: workingDirectory)
        if arguments.flag("--help") {
            output.line(command.help + "\n\n" + GlobalOptions.help)
            return 0
        }
        var global = try GlobalOptions(arguments, applyLogLevel: !inDaemon)
        global.output.sink = output.sink
        return try await body(arguments, global)
    } catch let error as UsageError {
        output.log("error: \(error)\nrun `carrier \(command.name) --help` for usage")
        return 2
    } catch {
        output.log("error: \(error)")
        return 1
    }
}

// Every command may hold the identity's secret key (or the Express node's):
// no core dumps, and no reading of this process's memory by others.
_ = cshim_disable_core_dumps()
// Threads may still be signing or in a DTLS handshake when a command exits.
OpenSSLLifetime.keepThroughExit()
let status = await runCLI(Array(CommandLine.arguments.dropFirst()))
ConsoleWriter.shared.drain()
exit(status)
