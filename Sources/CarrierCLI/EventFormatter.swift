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
        case .backOnline(let seconds, let reachability):
            return (
                "back on the network after \(seconds) s off it (\(reachability.rebootstraps) re-bootstraps, "
                    + "\(reachability.restarts) restarts of toxcore since start)",
                ["event": "backOnline", "offlineSeconds": seconds, "node": reachability.json]
            )
        case .toxRestarted(let reason):
            return ("\(reason): started toxcore afresh", ["event": "toxRestarted", "reason": reason])
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
        case .message(let from, let ext, let data, let timestamp, let offline):
            var json: [String: any Sendable] = ["event": "message", "from": from.description, "bytes": data.count]
            if let ext { json["extension"] = ext }
            // Short UTF-8 text is shown; anything else only by its size.
            let text = data.count <= 4096 ? String(validating: data, as: UTF8.self) : nil
            if let text { json["text"] = text }
            let body = text ?? "<\(data.count) bytes>"
            if offline {
                // Stored by an Express node while this node was offline: sent back then.
                json["offline"] = true
                json["timestamp"] = (timestamp.timeIntervalSince1970 * 1000).rounded() / 1000
                return ("offline message from \(from)\(ext.map { ":\($0)" } ?? "") sent \(timestamp): \(body)", json)
            }
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
        case .file(let fileEvent):
            return describe(fileEvent)
        case .dropped(let from, let reason):
            return (
                "dropped from \(from?.description ?? "unknown"): \(reason)",
                ["event": "dropped", "from": from?.description ?? "", "reason": reason]
            )
        }
    }

    static func describe(_ event: FileTransferEvent) -> (text: String, json: [String: any Sendable]) {
        let key = event.key
        var json: [String: any Sendable] = [
            "event": "file", "transfer": key.description, "friend": key.friend.description,
            "direction": key.outgoing ? "out" : "in", "sha256": key.sha256Hex,
        ]
        let who = key.outgoing ? "to \(key.friend)" : "from \(key.friend)"
        switch event {
        case .offered(let offer):
            json["state"] = "offered"
            json["name"] = offer.name
            json["size"] = offer.size
            return ("file \(key) offered \(who): \(offer.name) (\(offer.size) bytes)", json)
        case .accepted(_, let offset):
            json["state"] = "accepted"
            json["offset"] = offset
            return ("file \(key) \(who) accepted\(offset > 0 ? ", resuming at byte \(offset)" : "")", json)
        case .progress(_, let bytes, let total):
            json["state"] = "progress"
            json["bytes"] = bytes
            json["total"] = total
            return ("file \(key) \(who): \(bytes) of \(total) bytes", json)
        case .paused(_, let byPeer), .resumed(_, let byPeer):
            let paused: Bool = if case .paused = event { true } else { false }
            json["state"] = paused ? "paused" : "resumed"
            json["byPeer"] = byPeer
            return ("file \(key) \(who) \(paused ? "paused" : "resumed") by \(byPeer ? "the friend" : "us")", json)
        case .interrupted(_, let reason):
            json["state"] = "interrupted"
            json["reason"] = reason
            // The reason says what comes next (the friend back, the other path).
            return ("file \(key) \(who) interrupted (\(reason))", json)
        case .finished(_, let outcome):
            json["state"] = "finished"
            switch outcome {
            case .completed(let path, let bytes):
                json["outcome"] = "completed"
                json["bytes"] = bytes
                if let path { json["path"] = path }
                return (
                    "file \(key) \(who) completed: \(bytes) bytes\(path.map { " saved to \($0)" } ?? ", confirmed")",
                    json
                )
            case .cancelled(let byPeer, let reason):
                json["outcome"] = "cancelled"
                json["byPeer"] = byPeer
                if let reason { json["reason"] = reason }
                return (
                    "file \(key) \(who) cancelled by \(byPeer ? "the friend" : "us")\(reason.map { ": \($0)" } ?? "")",
                    json
                )
            case .failed(let reason):
                json["outcome"] = "failed"
                json["reason"] = reason
                return ("file \(key) \(who) failed: \(reason)", json)
            }
        }
    }
}

extension Reachability {
    /// For the control socket's `status` and `listen`'s events.
    var json: [String: any Sendable] {
        var object: [String: any Sendable] = [
            "online": online, "offlineSeconds": offlineSeconds, "timesOffline": timesOffline,
            "longestOfflineSeconds": longestOfflineSeconds, "totalOfflineSeconds": totalOfflineSeconds,
            "rebootstraps": rebootstraps, "restarts": restarts,
        ]
        if let lastOffline { object["lastOfflineUnixMs"] = (lastOffline.timeIntervalSince1970 * 1000).rounded() }
        return object
    }
}
