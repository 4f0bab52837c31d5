import Foundation

/// Results go to stdout (one JSON object per line with `--json`); logs,
/// progress and errors go to stderr.
struct Output: Sendable {
    let json: Bool

    func result(_ text: String, _ object: [String: any Sendable]) {
        line(json ? Self.encode(object) : text)
    }

    func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    func log(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
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
