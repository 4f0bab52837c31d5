/// A file name that arrived from the network, made safe to create inside a
/// receive directory: one path component, no control characters, not hidden,
/// never `.` or `..`, at most `maxBytes` of UTF-8.
public enum SafeFileName {
    /// The longest name kept, in UTF-8 bytes (file systems allow 255).
    public static let maxBytes = 200

    /// The safe form of `name`; `fallback` when nothing usable is left.
    public static func make(_ name: String, fallback: String = "received-file") -> String {
        // The last component, whichever separator the sender's system uses.
        let last = name.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for scalar in last.unicodeScalars where !isControl(scalar) { scalars.append(scalar) }
        var cleaned = String(scalars)
        // Leading dots would hide the file (or name . and ..); edge spaces confuse people.
        while let first = cleaned.first, first == "." || first == " " { cleaned.removeFirst() }
        while let last = cleaned.last, last == " " || last == "." { cleaned.removeLast() }
        cleaned = truncated(cleaned, toBytes: maxBytes)
        return cleaned.isEmpty ? fallback : cleaned
    }

    /// C0 and C1 control characters, DEL, and the Unicode line and paragraph
    /// separators and bidirectional overrides that make a name read differently.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// The longest prefix of whole characters that fits in `limit` UTF-8 bytes.
    public static func truncated(_ text: String, toBytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > limit { break }
            result.append(character)
            used += size
        }
        return result
    }
}
