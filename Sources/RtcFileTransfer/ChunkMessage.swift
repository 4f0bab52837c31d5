import Foundation

/// The reference peers' file format on a data channel: the file as JSON text
/// messages, each `{"fileId","index","mime","end","data":<base64>}` (the
/// ElastosWebRTCSDK's sendFile). We add `name` and `size`, which they ignore.
struct ChunkMessage: Equatable {
    var fileId: String
    var index: Int
    var mime: String
    var end: Bool
    var data: [UInt8]
    var name: String?
    var size: UInt64?
    /// On the last chunk: the SHA-256 of the whole file, which the receiver checks (our addition).
    var sha256: String?

    /// Raw bytes per chunk: 16 KiB, about 22 KB of base64, well under every stack's message limit.
    static let chunkSize = 16 * 1024
    /// Text larger than this is not a chunk (bounds what a peer can make us decode).
    static let maxText = 64 * 1024

    var json: String {
        var object: [String: Any] = [
            "fileId": fileId, "index": index, "mime": mime, "end": end, "data": Data(data).base64EncodedString(),
        ]
        if let name { object["name"] = name }
        if let size { object["size"] = size }
        if let sha256 { object["sha256"] = sha256 }
        let encoded = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: encoded, as: UTF8.self)
    }

    init(fileId: String, index: Int, mime: String, end: Bool, data: [UInt8], name: String? = nil, size: UInt64? = nil) {
        self.fileId = fileId
        self.index = index
        self.mime = mime
        self.end = end
        self.data = data
        self.name = name
        self.size = size
    }

    /// nil for text that is not a chunk.
    init?(json text: String) {
        guard text.utf8.count <= Self.maxText, text.contains("\"fileId\""), let raw = text.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: raw) as? [String: Any],
            let fileId = object["fileId"] as? String, !fileId.isEmpty, fileId.utf8.count <= 128,
            let index = (object["index"] as? NSNumber)?.intValue, index >= 0
        else { return nil }
        let base64 = object["data"] as? String ?? ""
        guard let bytes = Data(base64Encoded: base64) else { return nil }
        self.fileId = fileId
        self.index = index
        mime = object["mime"] as? String ?? "application/octet-stream"
        end = object["end"] as? Bool ?? false
        data = Array(bytes)
        name = object["name"] as? String
        size = (object["size"] as? NSNumber)?.uint64Value
        sha256 = (object["sha256"] as? String)?.lowercased()
    }

    /// A file name for a chunked file that came without one: the id, with an extension from the MIME type.
    static func fallbackName(fileId: String, mime: String) -> String {
        let extensions = [
            "image/jpeg": ".jpg", "image/png": ".png", "image/gif": ".gif", "text/plain": ".txt",
            "application/pdf": ".pdf", "audio/mpeg": ".mp3", "video/mp4": ".mp4",
        ]
        return fileId + (extensions[mime.lowercased()] ?? "")
    }
}

/// `{"type":"file-cancel","name":…}`: either side stops a transfer.
enum CancelMessage {
    static func json(name: String) -> String {
        let object: [String: Any] = ["type": "file-cancel", "name": name]
        let encoded = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: encoded, as: UTF8.self)
    }

    static func isCancel(_ text: String) -> Bool {
        guard text.utf8.count <= 4096, let raw = text.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: raw) as? [String: Any]
        else { return false }
        return object["type"] as? String == "file-cancel"
    }
}
