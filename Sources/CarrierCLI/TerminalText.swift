/// Text from peers made safe to print on a terminal. A friend's name, a
/// stranger's hello, a message or a call id could hold escape sequences
/// (clear the screen, retitle the window, hide text, fake a line with a
/// newline) or bidirectional overrides that make a line read differently.
/// Each such character is printed as an escape (`\n`, `\u{1B}`) instead.
enum TerminalText {
    /// `text` with every control character escaped; `keepLines` leaves
    /// newlines and tabs as they are (for our own multi-line results).
    static func escaped(_ text: String, keepLines: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0, keepLines: keepLines) }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            guard isControl(scalar, keepLines: keepLines) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default: result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return result
    }

    /// C0 and C1 controls, DEL, line and paragraph separators, bidirectional
    /// embeddings, overrides and isolates.
    static func isControl(_ scalar: Unicode.Scalar, keepLines: Bool) -> Bool {
        switch scalar.value {
        case 0x0A, 0x09: !keepLines
        case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F: true
        default: false
        }
    }
}
