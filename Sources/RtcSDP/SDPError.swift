/// Why a session description could not be parsed. Each case names the line.
public struct SDPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The line's number (1-based), 0 when no line is at fault.
    public let line: Int
    /// The line as it was.
    public let text: String
    /// What is wrong with it.
    public let reason: String

    /// An error at a line.
    public init(line: Int, text: String, reason: String) {
        self.line = line
        self.text = text
        self.reason = reason
    }

    /// The line and the reason, for a log or a user.
    public var description: String {
        line > 0 ? "SDP line \(line) \"\(text.prefix(80))\": \(reason)" : "SDP: \(reason)"
    }
}
