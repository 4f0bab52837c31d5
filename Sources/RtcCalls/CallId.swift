/// The rule for a call id that a peer chose. Ids name folders and files
/// (a recording per call, a session's streams), and a peer's string must
/// never reach a path as it is: `../../x` once made a folder outside the
/// recording folder. So an id is UUID-like: ASCII letters, digits and `-`,
/// 1 to 64 of them. The reference peers send UUIDs (the native Beagle app
/// upper-case), which pass.
public enum CallId {
    /// The longest id accepted.
    public static let maxLength = 64

    /// Whether `id` may name a call.
    public static func isAcceptable(_ id: String) -> Bool {
        let bytes = id.utf8
        guard (1...maxLength).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x2D
        }
    }
}
