import CarrierNode
import Foundation

/// One line per node event: text for people, a JSON object for programs.
enum EventFormatter {
    static func describe(_ event: CarrierEvent) -> (text: String, json: [String: any Sendable]) {
        switch event {
        case .connection(let connected):
            return (
                "network \(connected ? "connected" : "disconnected")", ["event": "connection", "connected": connected]
            )
        case .ready:
            return ("ready", ["event": "ready"])
        case .friendRequest(let from, let name, _, let hello):
            return (
                "friend request from \(from)\(name.map { " (\($0))" } ?? ""): \(hello)",
                ["event": "friendRequest", "from": from.description, "name": name ?? "", "hello": hello]
            )
        case .friendAdded(let info):
            return ("friend added \(info.userId)", ["event": "friendAdded", "userId": info.userId.description])
        case .friendRemoved(let id):
            return ("friend removed \(id)", ["event": "friendRemoved", "userId": id.description])
        case .friendConnection(let id, let connected):
            return (
                "friend \(id) \(connected ? "online" : "offline")",
                ["event": "friendConnection", "userId": id.description, "connected": connected]
            )
        case .friendPresence(let id, let presence):
            return (
                "friend \(id) presence \(presence.rawValue)",
                ["event": "friendPresence", "userId": id.description, "presence": presence.rawValue]
            )
        case .friendInfo(let id, let info):
            return (
                "friend \(id) is \"\(info.name)\"",
                ["event": "friendInfo", "userId": id.description, "name": info.name]
            )
        case .message(let from, let ext, let data, _):
            var json: [String: any Sendable] = ["event": "message", "from": from.description, "bytes": data.count]
            if let ext { json["extension"] = ext }
            // Short UTF-8 text is shown; anything else only by its size.
            let text = data.count <= 4096 ? String(validating: data, as: UTF8.self) : nil
            if let text { json["text"] = text }
            let body = text ?? "<\(data.count) bytes>"
            return ("message from \(from)\(ext.map { ":\($0)" } ?? ""): \(body)", json)
        case .receipt(let id, let to, let state):
            let stateText =
                switch state {
                case .delivered: "delivered"
                case .offline: "offline"
                case .error(let why): "error: \(why)"
                }
            return (
                "receipt \(id) to \(to): \(stateText)",
                ["event": "receipt", "id": Int(id), "to": to.description, "state": stateText]
            )
        case .inviteRequest(let invite):
            let text = String(decoding: invite.data, as: UTF8.self)
            return (
                "invite from \(invite.from)\(invite.extensionName.map { ":\($0)" } ?? ""): \(text)",
                [
                    "event": "invite", "from": invite.from.description, "extension": invite.extensionName ?? "",
                    "text": text,
                ]
            )
        case .groupInvite(let from, _):
            return ("group invite from \(from)", ["event": "groupInvite", "from": from.description])
        case .groupConnected(let group):
            return ("group \(group) connected", ["event": "groupConnected", "groupId": group.description])
        case .groupMessage(let group, let from, let data):
            let text = String(decoding: data, as: UTF8.self)
            return (
                "group \(group) message from \(from): \(text)",
                ["event": "groupMessage", "groupId": group.description, "from": from.description, "text": text]
            )
        case .groupTitle(let group, let title):
            return (
                "group \(group) title \(title)", ["event": "groupTitle", "groupId": group.description, "title": title]
            )
        case .groupPeersChanged(let group):
            return ("group \(group) peers changed", ["event": "groupPeers", "groupId": group.description])
        case .dropped(let from, let reason):
            return (
                "dropped from \(from?.description ?? "unknown"): \(reason)",
                ["event": "dropped", "from": from?.description ?? "", "reason": reason]
            )
        }
    }
}
