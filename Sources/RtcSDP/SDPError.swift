/// Why a session description could not be parsed. Each case names the line.
public struct SDPError: Error, Equatable, Sendable, CustomStringConvertible {
    public let line: Int
    public let text: String
    public let reason: String

    public init(line: Int, text: String, reason: String) {
        self.line = line
        self.text = text
        self.reason = reason
    }

    public var description: String {
        line > 0 ? "SDP line \(line) \"\(text.prefix(80))\": \(reason)" : "SDP: \(reason)"
    }
}
