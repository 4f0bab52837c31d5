import RtcCalls

/// Paths named after a call or a session, whose ids a peer chose. The call
/// layer refuses an id that is not UUID-like (`CallId`); this checks again
/// where the id meets the file system, so a peer's string never reaches a
/// path as it is, whatever let it through.
enum PerCallPath {
    /// Where one call's recording goes: `PREFIX-ID.webm` beside a `.webm`
    /// name, or the folder `DIR/ID`; nil for an id that may not name a file.
    static func recording(_ base: String, webm: Bool, callId: String) -> String? {
        guard CallId.isAcceptable(callId) else { return nil }
        return webm ? String(base.dropLast(5)) + "-" + callId + ".webm" : base + "/" + callId
    }

    /// Where one session stream's data goes: `DIR/session-ID-STREAM.bin`.
    static func sessionStream(_ directory: String, sessionId: String, stream: Int) -> String? {
        guard CallId.isAcceptable(sessionId), stream >= 0 else { return nil }
        return directory + "/session-\(sessionId)-\(stream).bin"
    }
}
