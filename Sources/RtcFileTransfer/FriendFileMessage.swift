import Foundation

/// The control messages of the friend file protocol (`carrier-friend-file/1`,
/// docs/file-protocol.md): text on a session's data channel, one file per
/// channel. The file's bytes are the binary messages between `accept` and
/// `verdict`, in order, from the accepted offset.
///
/// Unlike the call's binary protocol, the receiver answers before any byte
/// moves: it accepts at the offset it already holds (a transfer cut over
/// either path resumes from the partial file) or refuses with a reason the
/// sender hears at once.
public enum FriendFileMessage: Equatable, Sendable {
    /// Sender: the file, by name (informational), size and SHA-256 (hex).
    /// `continuing`: the file is on its way over toxcore already, and this
    /// session is to carry on from the receiver's partial file (`"continues":
    /// true`); a receiver with no such transfer refuses it.
    case offer(name: String, size: UInt64, sha256: String, continuing: Bool = false)
    /// Receiver: send from this byte on (what it has already).
    case accept(offset: UInt64)
    /// Receiver: it does not take the file.
    case refuse(reason: String)
    /// Either side: stop sending bytes until `resume`.
    case pause
    /// Either side: go on after its own `pause`.
    case resume
    /// Either side: the transfer is over, unfinished.
    case cancel(reason: String)
    /// Receiver, after the last byte: whether size and SHA-256 matched and the file was stored.
    case verdict(ok: Bool, reason: String?)

    /// The DCEP protocol of the channel that carries one friend file.
    public static let protocolName = "carrier-friend-file/1"
    /// Control messages are short; a longer text is not one.
    public static let maxBytes = 4096
    /// A reason is cut to this many bytes.
    public static let maxReasonBytes = 512

    /// The message as one JSON object.
    public var json: String {
        let object: [String: Any] =
            switch self {
            case .offer(let name, let size, let sha256, let continuing):
                ["type": "offer", "name": name, "size": size, "sha256": sha256].merging(
                    continuing ? ["continues": true] : [:]
                ) { a, _ in a }
            case .accept(let offset): ["type": "accept", "offset": offset]
            case .refuse(let reason): ["type": "refuse", "reason": Self.cut(reason)]
            case .pause: ["type": "pause"]
            case .resume: ["type": "resume"]
            case .cancel(let reason): ["type": "cancel", "reason": Self.cut(reason)]
            case .verdict(let ok, let reason):
                ["type": "verdict", "ok": ok].merging(reason.map { ["reason": Self.cut($0)] } ?? [:]) { a, _ in a }
            }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads a control message; nil for text that is not one (too long, not
    /// JSON, an unknown type, a field missing or of the wrong kind).
    public init?(json text: String) {
        guard text.utf8.count <= Self.maxBytes, let data = text.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let type = object["type"] as? String
        else { return nil }
        let reason = (object["reason"] as? String).map(Self.cut)
        switch type {
        case "offer":
            guard let name = object["name"] as? String, let size = Self.unsigned(object["size"]),
                let sha256 = object["sha256"] as? String, sha256.utf8.count == 64,
                sha256.allSatisfy(\.isHexDigit)
            else { return nil }
            self = .offer(
                name: name, size: size, sha256: sha256.lowercased(), continuing: object["continues"] as? Bool == true)
        case "accept":
            guard let offset = Self.unsigned(object["offset"]) else { return nil }
            self = .accept(offset: offset)
        case "refuse": self = .refuse(reason: reason ?? "refused")
        case "pause": self = .pause
        case "resume": self = .resume
        case "cancel": self = .cancel(reason: reason ?? "cancelled")
        case "verdict":
            guard let ok = object["ok"] as? Bool else { return nil }
            self = .verdict(ok: ok, reason: reason)
        default: return nil
        }
    }

    /// A non-negative integer (JSON numbers arrive as NSNumber; a fraction or a sign is not one).
    private static func unsigned(_ value: Any?) -> UInt64? {
        guard let number = value as? NSNumber, number.doubleValue >= 0,
            number.doubleValue == Double(number.uint64Value)
        else { return nil }
        return number.uint64Value
    }

    private static func cut(_ text: String) -> String {
        guard text.utf8.count > maxReasonBytes else { return text }
        return String(decoding: text.utf8.prefix(maxReasonBytes), as: UTF8.self)
    }
}
