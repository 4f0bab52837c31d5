// A bot on the node library: accepts every friend request and echoes each
// message back to its sender. Run it beside `carrier node`:
//
//   swift run echo-bot DATA_DIR HOST:PORT:KEY
//
// then befriend it with `carrier friend add <its address>` and message it.
import CarrierNode
import Foundation

/// Writes a line to stdout at once (print buffers when stdout is a pipe).
func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

let arguments = CommandLine.arguments
guard arguments.count == 3, let entry = try? BootstrapNode(parsing: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: echo-bot DATA_DIR HOST:PORT:KEY\n".utf8))
    exit(2)
}

var options = CarrierOptions(dataDirectory: arguments[1], bootstrapNodes: [entry])
options.loopbackOnly = entry.host == "127.0.0.1"
let bot = try Carrier(options: options)
say("echo-bot \(bot.userId)\naddress \(await bot.address())")
let events = await bot.events()
try await bot.start()

for await event in events {
    switch event {
    case .ready:
        say("online")
    case .friendRequest(let from, _, _, let hello):
        say("accepting \(from): \(hello)")
        try? await bot.acceptFriend(from)
    case .message(let from, nil, let data, _, _):
        let state = try? await bot.deliverMessage(data, to: from.description)
        say("echoed \(data.count) bytes to \(from): \(String(describing: state))")
    default:
        break
    }
}
