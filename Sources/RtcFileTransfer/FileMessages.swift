import FileSafety
import Foundation

/// The text messages of the binary file protocol (docs/file-protocol.md).
enum FileMessage: Equatable {
    case header(name: String, size: UInt64, sha256: String)
    case ack(name: String, size: UInt64, sha256: String, ok: Bool)

    var json: String {
        let object: [String: Any] =
            switch self {
            case .header(let name, let size, let sha256):
                ["type": "file", "name": name, "size": size, "sha256": sha256]
            case .ack(let name, let size, let sha256, let ok):
                ["type": "file-ack", "name": name, "size": size, "sha256": sha256, "ok": ok]
            }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// nil for text that is not one of the protocol's messages.
    init?(json text: String) {
        guard text.utf8.count <= 4096, let data = text.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let type = object["type"] as? String, let name = object["name"] as? String,
            let size = (object["size"] as? NSNumber)?.uint64Value, let sha256 = object["sha256"] as? String
        else { return nil }
        switch type {
        case "file": self = .header(name: name, size: size, sha256: sha256)
        case "file-ack": self = .ack(name: name, size: size, sha256: sha256, ok: object["ok"] as? Bool ?? false)
        default: return nil
        }
    }

    /// A file name safe to create in the receive directory (`SafeFileName`).
    static func safeName(_ name: String) -> String { SafeFileName.make(name) }
}
