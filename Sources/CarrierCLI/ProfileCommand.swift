import CarrierNode
import Foundation

struct ProfileCommand: Command {
    static let name = "profile"
    static let daemonUse = DaemonUse.routed
    static let summary = "show or set this node's user info and presence (friends see them)"
    static let help = """
        Usage: carrier profile [--name N] [--description D] [--gender G] [--phone P]
                               [--email E] [--region R] [--presence none|away|busy]

        Sets the given fields (offline: they are kept in the data directory and
        reach friends the next time the node is online) and prints the profile.
        The description is the free-text status message friends see. Limits:
        name 63 bytes, description 127, the others 63 (Carrier's).
        --json prints {"userId","name","description","gender","phone","email","region","presence"}.
        """
    static let valued: Set<String> = [
        "--name", "--description", "--gender", "--phone", "--email", "--region", "--presence",
    ]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        _ = try arguments.positionals(0...0, usage: "carrier profile [--name N] [--presence none|away|busy] …")
        return try await global.withNode { node in
            var info = await node.userInfo()
            let fields: [(String, WritableKeyPath<UserInfo, String>)] = [
                ("--name", \.name), ("--description", \.description), ("--gender", \.gender), ("--phone", \.phone),
                ("--email", \.email), ("--region", \.region),
            ]
            var changed = false
            for (option, field) in fields {
                if let value = arguments.value(option) {
                    info[keyPath: field] = value
                    changed = true
                }
            }
            if changed { try await node.setUserInfo(info) }
            if let text = arguments.value("--presence") {
                guard let presence = Presence(rawValue: text) else {
                    throw UsageError("--presence takes none, away or busy")
                }
                try await node.setPresence(presence)
            }
            let presence = await node.presence()
            let lines = [
                "userId:      \(node.userId)", "name:        \(info.name)", "description: \(info.description)",
                "gender:      \(info.gender)", "phone:       \(info.phone)", "email:       \(info.email)",
                "region:      \(info.region)", "presence:    \(presence.rawValue)",
            ]
            global.output.result(
                lines.joined(separator: "\n"),
                [
                    "userId": node.userId.description, "name": info.name, "description": info.description,
                    "gender": info.gender, "phone": info.phone, "email": info.email, "region": info.region,
                    "presence": presence.rawValue,
                ])
            return 0
        }
    }
}

struct InviteCommand: Command {
    static let name = "invite"
    static let daemonUse = DaemonUse.routed
    static let summary = "send an invite (to an extension, optionally) and print the friend's reply"
    static let help = """
        Usage: carrier invite USERID[:EXTENSION] DATA [--timeout SECONDS]

        Goes online, waits for the friend, sends DATA (1 byte to 8 KB of text) as an
        invite, to the extension if one is named, and prints the reply: its status
        (0 is yes), reason and data. `carrier listen` replies status 0 to plain
        invites. Exit 0 on status 0, 1 on another status or no reply within
        --timeout (default 60 s).
        --json prints {"status","reason","data","ms"}.
        """
    static let valued: Set<String> = ["--timeout"]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let values = try arguments.positionals(2...2, usage: "carrier invite USERID[:EXTENSION] DATA")
        let friendText = String(values[0].split(separator: ":", maxSplits: 1).first ?? "")
        guard let friend = UserId(friendText) else { throw CarrierError.invalidUserId(friendText) }
        let timeout = try arguments.seconds("--timeout", default: 60)
        return try await global.withOnlineNode { node in
            guard await node.isFriend(friend) else { throw CarrierError.notFriend(friend.description) }
            guard await node.waitUntilConnected(to: friend, timeout: timeout) else {
                throw CarrierError.timedOut("\(friend) did not come online within \(timeout)")
            }
            let started = ContinuousClock.now
            let reply = try await node.sendInvite(Array(values[1].utf8), to: values[0], timeout: timeout)
            let ms = rounded((ContinuousClock.now - started).milliseconds)
            let data = String(decoding: reply.data, as: UTF8.self)
            global.output.result(
                "reply status \(reply.status)\(reply.reason.map { " (\($0))" } ?? "")\(data.isEmpty ? "" : ": \(data)") in \(ms) ms",
                ["status": Int(reply.status), "reason": reply.reason ?? "", "data": data, "ms": ms])
            return reply.status == 0 ? 0 : 1
        }
    }
}
