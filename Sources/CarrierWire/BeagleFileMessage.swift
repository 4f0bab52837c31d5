import Foundation

/// A file as Beagle's apps send it to a Carrier friend (wire notes §7.5):
/// a plain Carrier message (bulk when long), whole, at most 5 MiB. Two
/// forms are read:
///
/// - packed: `u32 BE meta length | meta JSON {"type":"file","filename":…,
///   "contentType":…,"size":N} | the file's bytes`, the meta at most 4 KiB;
/// - inline: `{"type":"image|file|audio|video","data":<base64>,"fileName":…,
///   "fileExtension":…,"mediaType":…}`.
///
/// The packed form is written. What a peer names a file is its text, never
/// a path: whoever saves it makes a safe name of it (`SafeFileName`).
public struct BeagleFileMessage: Equatable, Sendable {
    /// The name the sender gave, as it gave it.
    public var fileName: String
    /// Its MIME type, as the sender said (may be empty).
    public var contentType: String
    /// The file.
    public var data: [UInt8]

    /// The meta JSON at most.
    public static let maxMeta = 4096
    /// The whole message at most (Carrier's bulk message).
    public static let maxMessage = CarrierLimits.maxBulkMessage

    /// A file to send.
    public init(fileName: String, contentType: String = "application/octet-stream", data: [UInt8]) {
        self.fileName = fileName
        self.contentType = contentType
        self.data = data
    }

    /// The packed form; nil when it would pass 5 MiB or its name the meta's bound.
    public func encode() -> [UInt8]? {
        let meta: [String: Any] = [
            "type": "file", "filename": fileName, "contentType": contentType, "size": data.count,
        ]
        guard let json = try? JSONSerialization.data(withJSONObject: meta, options: [.sortedKeys]),
            json.count <= Self.maxMeta, 4 + json.count + data.count <= Self.maxMessage
        else { return nil }
        return withUnsafeBytes(of: UInt32(json.count).bigEndian) { Array($0) } + Array(json) + data
    }

    /// The file in a message, packed or inline; nil for a message that is not one.
    public static func decode(_ bytes: [UInt8]) -> BeagleFileMessage? {
        guard bytes.count <= maxMessage + 4096 else { return nil }
        return packed(bytes) ?? inline(bytes)
    }

    private static func packed(_ bytes: [UInt8]) -> BeagleFileMessage? {
        guard bytes.count >= 4 else { return nil }
        let length = bytes[0..<4].reduce(0) { $0 << 8 | Int($1) }
        guard length >= 2, length <= maxMeta, 4 + length <= bytes.count, bytes[4] == UInt8(ascii: "{"),
            let meta = try? JSONSerialization.jsonObject(with: Data(bytes[4..<4 + length])) as? [String: Any],
            meta["type"] as? String == "file", let name = meta["filename"] as? String
        else { return nil }
        let data = Array(bytes[(4 + length)...])
        if let size = meta["size"] as? Int, size != data.count { return nil }
        return BeagleFileMessage(fileName: name, contentType: meta["contentType"] as? String ?? "", data: data)
    }

    private static let inlineTypes: Set<String> = ["image", "file", "audio", "video"]

    private static func inline(_ bytes: [UInt8]) -> BeagleFileMessage? {
        guard bytes.first == UInt8(ascii: "{"),
            let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
            let type = object["type"] as? String, inlineTypes.contains(type),
            let text = object["data"] as? String, let data = Data(base64Encoded: text)
        else { return nil }
        var name = object["fileName"] as? String ?? type
        if let ext = object["fileExtension"] as? String, !ext.isEmpty, !name.hasSuffix("." + ext) {
            name += "." + ext
        }
        return BeagleFileMessage(fileName: name, contentType: object["mediaType"] as? String ?? "", data: Array(data))
    }
}
