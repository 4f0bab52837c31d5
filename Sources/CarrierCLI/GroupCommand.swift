import AsyncExtras
import CarrierNode
import Foundation

struct GroupCommand: Command {
    static let name = "group"
    static let daemonUse = DaemonUse.exclusive
    static let summary = "create or join a group (a toxcore conference) and talk in it"
    static let help = """
        Usage: carrier group create [--title T] [--invite USERID]… [--say TEXT]… [--duration S]
               carrier group join [--from USERID] [--say TEXT]… [--duration S]

        create  makes a group, sets its title and invites the friends named (each
                once it is online), then stays in the group
        join    waits for a group invite (from USERID, or any friend) and joins it

        In the group, every line on stdin is sent as a message, --say TEXT too (a
        second after someone else is there), and every group event prints as a line (JSON with
        --json: groupMessage, groupTitle, groupPeers with the peers' ids and names).
        Groups live while a member is online; the command stays until Ctrl-C, or
        --duration seconds.
        """
    static let valued: Set<String> = ["--title", "--invite", "--say", "--duration", "--from"]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let values = try arguments.positionals(1...1, usage: "carrier group create|join [options]")
        let duration = arguments.value("--duration") != nil ? try arguments.seconds("--duration", default: 0) : nil
        let sayings = arguments.all("--say")
        let output = global.output
        return try await global.withOnlineNode { node in
            let events = await node.events()
            try await global.waitUntilReady(node, timeout: .seconds(90))
            let group: GroupId
            switch values[0] {
            case "create":
                group = try await node.createGroup()
                if let title = arguments.value("--title") { try await node.setGroupTitle(title, for: group) }
                for text in arguments.all("--invite") {
                    guard let friend = UserId(text) else { throw CarrierError.invalidUserId(text) }
                    guard await node.waitUntilConnected(to: friend, timeout: .seconds(90)) else {
                        throw CarrierError.timedOut("\(friend) did not come online to be invited")
                    }
                    try await node.inviteToGroup(group, friend: friend)
                    output.log("invited \(friend)")
                }
            case "join":
                let from = try arguments.value("--from").map { text throws -> UserId in
                    guard let id = UserId(text) else { throw CarrierError.invalidUserId(text) }
                    return id
                }
                output.log("waiting for a group invite\(from.map { " from \($0)" } ?? "")…")
                let invite = await events.first(within: .seconds(300)) { event -> (UserId, [UInt8])? in
                    if case .groupInvite(let sender, let cookie) = event, from == nil || from == sender {
                        return (sender, cookie)
                    }
                    return nil
                }
                guard let (sender, cookie) = invite else { throw CarrierError.timedOut("no group invite came") }
                group = try await node.joinGroup(from: sender, cookie: cookie)
            default:
                throw UsageError("carrier group create|join, not \(values[0])")
            }
            output.result("group \(group)", ["event": "group", "groupId": group.description])
            return await talk(
                in: group, node: node, events: events, sayings: sayings, duration: duration, output: output)
        }
    }

    /// Prints the group's events, sends stdin lines and --say texts (once
    /// someone else is in the group), until Ctrl-C or the duration.
    static func talk(
        in group: GroupId, node: Carrier, events: AsyncStream<CarrierEvent>, sayings: [String], duration: Duration?,
        output: Output
    ) async -> Int32 {
        let printer = Task {
            var said = sayings.isEmpty
            for await event in events {
                switch event {
                case .groupMessage(group, _, _), .groupTitle(group, _):
                    let (text, json) = EventFormatter.describe(event)
                    output.event(text, json)
                case .groupPeersChanged(group), .groupConnected(group):
                    let peers = (try? await node.groupPeers(group)) ?? []
                    output.event(
                        "group \(group) peers: \(peers.map { $0.name.isEmpty ? $0.userId.description : $0.name }.joined(separator: ", "))",
                        [
                            "event": "groupPeers", "groupId": group.description,
                            "peers": peers.map { ["userId": $0.userId.description, "name": $0.name] },
                        ])
                    if !said, peers.contains(where: { $0.userId != node.userId }) {
                        said = true
                        // A peer is listed a moment before its side of the group is connected;
                        // what is said earlier does not reach it. A second is plenty on a LAN.
                        Task {
                            try? await Task.sleep(for: .seconds(1))
                            for text in sayings { try? await node.sendGroupMessage(Array(text.utf8), to: group) }
                        }
                    }
                default:
                    break
                }
            }
        }
        let reader = Thread {
            while let line = readLine() {
                guard !line.isEmpty else { continue }
                Task { try? await node.sendGroupMessage(Array(line.utf8), to: group) }
            }
        }
        reader.start()
        if let duration {
            try? await Task.sleep(for: duration)
        } else {
            await Termination.wait()
        }
        printer.cancel()
        return 0
    }
}
