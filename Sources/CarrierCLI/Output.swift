import Foundation

/// Results go to stdout (one JSON object per line with `--json`); logs,
/// progress and errors go to stderr, both through `ConsoleWriter` (in order,
/// never blocking the caller).
///
/// A command the daemon runs for a client writes through `sink` instead:
/// each line goes back over the control socket to the client's stdout or
/// stderr.
struct Output: Sendable {
    enum Stream: Sendable { case stdout, stderr }
    let json: Bool
    var sink: (@Sendable (Stream, String) -> Void)? = nil

    /// A result: the JSON object with `--json`, else the text, with control
    /// characters escaped (newlines and tabs kept: some results span lines).
    func result(_ text: String, _ object: [String: any Sendable]) {
        line(json ? Self.encode(object) : TerminalText.escaped(text, keepLines: true))
    }

    /// One line about something a peer did or sent: as `result`, and a
    /// newline in it is escaped too, so a peer cannot print a line of its own.
    func event(_ text: String, _ object: [String: any Sendable]) {
        line(json ? Self.encode(object) : TerminalText.escaped(text))
    }

    func line(_ text: String) {
        if let sink { return sink(.stdout, text) }
        ConsoleWriter.shared.write(text, to: .stdout)
    }

    func log(_ text: String) {
        if let sink { return sink(.stderr, text) }
        ConsoleWriter.shared.write(text, to: .stderr)
    }

    static func encode(_ object: [String: any Sendable]) -> String {
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Milliseconds rounded to 0.1, for reports.
func rounded(_ value: Double) -> Double { (value * 10).rounded() / 10 }
