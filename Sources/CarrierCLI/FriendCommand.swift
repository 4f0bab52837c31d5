import AsyncExtras
import CarrierNode
import Foundation

struct FriendCommand: Command {
    static let name = "friend"
    static let daemonUse = DaemonUse.routed
    static let summary = "add, list or remove friends"
    static let help = """
        Usage: carrier friend add ADDRESS [--hello TEXT] [--wait SECONDS]
               carrier friend list
               carrier friend remove USERID
               carrier friend label USERID TEXT

        add     sends a friend request and waits until the friend accepts and is
                connected (exit 0), or until --wait runs out (default 120 s, exit 1;
                with an Express node the request also waits there for an address
                that is offline: then "stored offline", exit 0)
        list    prints the friend list from the data directory (no network needed)
        remove  removes a friend locally
        label   sets a local name for a friend
        """
    static let valued: Set<String> = ["--hello", "--wait"]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let values = arguments.positionals
        switch values.first {
        case "add":
            let address = try arguments.positionals(
                2...2, usage: "carrier friend add ADDRESS [--hello TEXT] [--wait SECONDS]")[1]
            guard let friend = CarrierAddress(address) else { throw CarrierError.invalidAddress(address) }
            let wait = try arguments.seconds("--wait", default: 120)
            let hello = arguments.value("--hello") ?? "hello"
            return try await global.withOnlineNode { node in
                let started = ContinuousClock.now
                let known = await node.friendInfo(friend.userId)
                if known?.connected != true {
                    // Already an accepted friend: nothing to send, just wait for it to come online.
                    do { try await node.addFriend(address: address, hello: hello) } catch CarrierError.alreadyFriend(_)
                    {}
                }
                global.output.log(
                    "friend request sent to \(friend.userId); waiting up to \(wait) for it to be accepted")
                guard await node.waitUntilConnected(to: friend.userId, timeout: wait) else {
                    guard !node.options.expressNodes.isEmpty else {
                        global.output.log("error: \(friend.userId) did not connect within \(wait)")
                        return 1
                    }
                    // The request was left on Express as well (Carrier.addFriend): it waits there.
                    global.output.result(
                        "stored offline: \(friend.userId) did not connect within \(wait); the request waits on "
                            + "Express and reaches it when it comes online",
                        ["userId": friend.userId.description, "connected": false, "request": "offline"])
                    return 0
                }
                let elapsed = ContinuousClock.now - started
                global.output.result(
                    "friend \(friend.userId) connected after \(rounded(elapsed.milliseconds)) ms",
                    ["userId": friend.userId.description, "connected": true, "ms": rounded(elapsed.milliseconds)])
                return 0
            }
        case "list":
            _ = try arguments.positionals(1...1, usage: "carrier friend list")
            var friends: [FriendInfo] = []
            _ = try await global.withNode { node in
                friends = await node.friendList()
                return 0
            }
            if global.output.json {
                for friend in friends {
                    global.output.line(
                        Output.encode([
                            "userId": friend.userId.description, "label": friend.label, "name": friend.info.name,
                        ]))
                }
            } else if friends.isEmpty {
                global.output.line("no friends yet: add one with `carrier friend add ADDRESS`")
            } else {
                for friend in friends {
                    global.output.line(
                        TerminalText.escaped(
                            [friend.userId.description, friend.label, friend.info.name].filter { !$0.isEmpty }.joined(
                                separator: "  ")))
                }
            }
            return 0
        case "remove", "label":
            let usage = values.first == "remove" ? "carrier friend remove USERID" : "carrier friend label USERID TEXT"
            let parts = try arguments.positionals(values.first == "remove" ? 2...2 : 3...3, usage: usage)
            guard let id = UserId(parts[1]) else { throw CarrierError.invalidUserId(parts[1]) }
            _ = try await global.withNode { node in
                if parts[0] == "remove" {
                    try await node.removeFriend(id)
                } else {
                    try await node.setLabel(parts[2], for: id)
                }
                return 0
            }
            global.output.result(
                "\(parts[0] == "remove" ? "removed" : "labelled") \(id)", ["userId": id.description, "ok": true])
            return 0
        default:
            throw UsageError("usage: carrier friend add|list|remove|label …")
        }
    }
}

struct MessageCommand: Command {
    static let name = "message"
    static let daemonUse = DaemonUse.routed
    static let summary = "send a message to a friend and wait for its receipt"
    static let help = """
        Usage: carrier message USERID[:EXTENSION] TEXT [--wait-receipt SECONDS]
                                                       [--offline-after SECONDS]

        Goes online, waits for the friend to connect, sends TEXT and waits for the
        delivery receipt: "delivered", exit 0.

        With an Express node (--express, or the config file), a friend who has not
        connected --offline-after seconds (default 5) after this node joined gets
        the message sealed on Express: "stored offline" ({"receipt":"offline"}),
        exit 0; the message is in the friend's mailbox and arrives when it comes
        online. Without one, the command waits up to --wait-receipt (default 60 s)
        for the friend and fails if it does not come. Exit 1 on an error receipt.
        """
    static let valued: Set<String> = ["--wait-receipt", "--offline-after"]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let values = try arguments.positionals(2...2, usage: "carrier message USERID TEXT [--wait-receipt SECONDS]")
        let target = values[0]
        let friendText = String(target.split(separator: ":", maxSplits: 1).first ?? "")
        guard let friend = UserId(friendText) else { throw CarrierError.invalidUserId(friendText) }
        let wait = try arguments.seconds("--wait-receipt", default: 60)
        let grace = try arguments.seconds("--offline-after", default: 5)
        var options = global.nodeOptions()
        options.receiptTimeout = wait
        return try await global.withOnlineNode(options) { node in
            guard await node.isFriend(friend) else { throw CarrierError.notFriend(friend.description) }
            let started = ContinuousClock.now
            let express = !node.options.expressNodes.isEmpty
            if express {
                // Joined (or not: Express needs no toxcore), then a short grace for the friend.
                _ = await node.waitUntilReady(timeout: wait)
                _ = await node.waitUntilConnected(to: friend, timeout: grace)
            } else if !(await node.waitUntilConnected(to: friend, timeout: wait)) {
                global.output.log(
                    "error: \(friend) did not come online within \(wait) (with an Express node, --express, "
                        + "the message would wait for it there)")
                return 1
            }
            let sent = ContinuousClock.now
            let state = try await node.deliverMessage(Array(values[1].utf8), to: target)
            let ms = rounded((ContinuousClock.now - sent).milliseconds)
            switch state {
            case .delivered:
                global.output.result(
                    "delivered in \(ms) ms (friend connected after \(rounded((sent - started).milliseconds)) ms)",
                    ["receipt": "delivered", "ms": ms])
                return 0
            case .offline:
                global.output.result(
                    "stored offline in \(ms) ms: \(friend) gets it from Express when it comes online",
                    ["receipt": "offline", "ms": ms])
                return 0
            case .error(let why):
                global.output.log("error: not delivered: \(why)")
                global.output.result("not delivered: \(why)", ["receipt": "error", "reason": why])
                return 1
            }
        }
    }
}
