/// A small command-line reader: flags, options with values (repeatable) and
/// positionals, in any order. Unknown options are usage errors.
struct Arguments {
    private(set) var positionals: [String] = []
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// The client's working directory, for a command the daemon runs: the
    /// paths it names are relative to that, not to the daemon's.
    let workingDirectory: String?

    /// Options whose value is a path (made absolute for the daemon).
    static let pathOptions: Set<String> = [
        "--record", "--media", "--audio", "--video", "--receive-dir", "--send-file", "--config",
    ]

    /// `valued` lists the options that take a value; every other `--name` is a flag.
    init(
        _ raw: [String], valued: Set<String>, flags known: Set<String>, workingDirectory: String? = nil
    ) throws(UsageError) {
        self.workingDirectory = workingDirectory
        var index = 0
        while index < raw.count {
            let argument = raw[index]
            index += 1
            if argument == "--" {
                positionals += raw[index...]
                break
            }
            guard argument.hasPrefix("-"), argument.count > 1, Double(argument) == nil else {
                positionals.append(argument)
                continue
            }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            if name == "-h" { name = "--help" }
            if valued.contains(name) {
                guard let value = inlineValue ?? (index < raw.count ? raw[index] : nil) else {
                    throw UsageError("\(name) needs a value")
                }
                if inlineValue == nil { index += 1 }
                values[name, default: []].append(Self.pathOptions.contains(name) ? resolve(value) : value)
            } else if known.contains(name) {
                flags.insert(name)
            } else {
                throw UsageError("unknown option \(name)")
            }
        }
    }

    /// `path` as the command's user meant it: relative to their working directory.
    func resolve(_ path: String) -> String {
        guard let workingDirectory, !path.hasPrefix("/") else { return path }
        return workingDirectory + "/" + path
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }

    func seconds(_ name: String, default fallback: Double) throws(UsageError) -> Duration {
        guard let text = value(name) else { return .milliseconds(Int(fallback * 1000)) }
        guard let seconds = Double(text), seconds >= 0, seconds < 1e7 else {
            throw UsageError("\(name) takes a number of seconds, not \(text)")
        }
        return .milliseconds(Int(seconds * 1000))
    }

    /// A whole number in `range`, or nil when the option is not given.
    func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("\(name) takes a number from \(range.lowerBound) to \(range.upperBound), not \(text)")
        }
        return number
    }

    func port(_ name: String) throws(UsageError) -> UInt16? {
        guard let text = value(name) else { return nil }
        guard let port = UInt16(text), port > 0 else {
            throw UsageError("\(name) takes a port number 1-65535, not \(text)")
        }
        return port
    }

    /// The positionals, checked for count.
    func positionals(_ count: ClosedRange<Int>, usage: String) throws(UsageError) -> [String] {
        guard count.contains(positionals.count) else { throw UsageError("usage: \(usage)") }
        return positionals
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
