import CarrierNode
import Foundation

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
    do {
        let arguments = try Arguments(
            rest, valued: GlobalOptions.valued.union(command.valued), flags: GlobalOptions.flags.union(command.flags))
        if arguments.flag("--help") {
            print(command.help + "\n\n" + GlobalOptions.help)
            return 0
        }
        return try await command.run(arguments, try GlobalOptions(arguments))
    } catch let error as UsageError {
        FileHandle.standardError.write(Data("error: \(error)\nrun `carrier \(name) --help` for usage\n".utf8))
        return 2
    } catch {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        return 1
    }
}

exit(await runCLI(Array(CommandLine.arguments.dropFirst())))
