import Foundation

/// A secret the user gives a command (a secret key, a TURN password): from
/// a file (`--NAME-file FILE`, `-` for standard input, first line) or the
/// environment, which other local users cannot read, rather than as an
/// argument, which any of them sees in `ps`. An argument still works, with
/// a warning.
enum SecretOption {
    /// The secret of option `--NAME`: `--NAME-file`, then the variable `environment`, then `--NAME` itself.
    static func value(
        _ arguments: Arguments, option: String, environment: String, output: Output
    ) throws(UsageError) -> String? {
        if let path = arguments.value(option + "-file") {
            return try firstLine(path, option: option + "-file")
        }
        if let value = ProcessInfo.processInfo.environment[environment], !value.isEmpty { return value }
        guard let value = arguments.value(option) else { return nil }
        output.log(
            "warning: \(option) on the command line can be read by any local user (ps); "
                + "use \(option)-file FILE, \(option)-file - (standard input) or \(environment)")
        return value
    }

    /// The options a command takes for secret `--NAME`.
    static func valued(_ option: String) -> Set<String> { [option, option + "-file"] }

    /// One line of standard input, read a byte at a time: what follows it
    /// stays for the command (`carrier rtc` reads its signaling there).
    static func standardInputLine() -> Data? {
        var line = Data()
        var byte: UInt8 = 0
        while line.count < 4096 {
            let count = read(0, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1, byte != UInt8(ascii: "\n") else { break }
            line.append(byte)
        }
        return line.isEmpty ? nil : line
    }

    /// The first line of `path` (`-`: standard input), trimmed.
    static func firstLine(_ path: String, option: String) throws(UsageError) -> String {
        let data: Data?
        if path == "-" {
            data = standardInputLine()
        } else {
            data = FileManager.default.contents(atPath: path)
        }
        guard let data,
            let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first
        else {
            throw UsageError(
                "\(option): cannot read a secret from the first line of \(path == "-" ? "standard input" : path)")
        }
        return line.trimmingCharacters(in: .whitespaces)
    }
}
