import Foundation

/// How much the library says, from the most severe.
public enum LogLevel: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible {
    case error, warning, info, debug

    /// More severe levels sort first (`.error < .debug`).
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The level's name as `--log-level` takes it.
    public var description: String {
        switch self {
        case .error: "error"
        case .warning: "warning"
        case .info: "info"
        case .debug: "debug"
        }
    }

    /// A level from its name (any case), as given to `--log-level`; nil for an unknown name.
    public init?(_ text: String) {
        guard let level = Self.allCases.first(where: { $0.description == text.lowercased() }) else { return nil }
        self = level
    }
}

/// The library's one logging facility: a logger per subsystem (a layer:
/// `node`, `express`, `ice`, `dtls`, `srtp`, `peer`, `calls`, …) writes
/// lines at a level; what is at or above `LogSettings.level` goes to the sink
/// (stderr by default: `2026-12-01T15:45:00.123Z warning ice: …`). Messages
/// below the level are not even built. Safe from any thread.
public struct Logger: Sendable {
    /// The layer this logger speaks for, printed on every line.
    public let subsystem: String

    /// A logger for one subsystem (cheap to make; loggers hold no state).
    public init(_ subsystem: String) { self.subsystem = subsystem }

    /// Something failed and behaviour changes because of it.
    public func error(_ message: @autoclosure () -> String) { log(.error, message) }
    /// Something went wrong that the library worked around.
    public func warning(_ message: @autoclosure () -> String) { log(.warning, message) }
    /// Drops, fallbacks and decisions worth knowing when explaining a run.
    public func info(_ message: @autoclosure () -> String) { log(.info, message) }
    /// Detail for following a problem step by step.
    public func debug(_ message: @autoclosure () -> String) { log(.debug, message) }

    /// Writes `message` at `level` if that level is enabled; the message is built only then.
    public func log(_ level: LogLevel, _ message: () -> String) {
        guard LogSettings.enabled(level) else { return }
        LogSettings.write(level, subsystem, message())
    }
}

/// The level and the sink every `Logger` uses.
public enum LogSettings {
    /// Receives every enabled line: level, subsystem and message.
    public typealias Sink = @Sendable (LogLevel, _ subsystem: String, _ message: String) -> Void

    private final class State: @unchecked Sendable {
        // Guarded by `lock`: read on every log call from any thread.
        let lock = NSLock()
        var level = LogLevel.warning
        var sink: Sink = LogSettings.standardError
    }

    private static let state = State()

    /// What is logged: this level and the more severe ones (default `.warning`).
    public static var level: LogLevel {
        get { state.lock.withLock { state.level } }
        set { state.lock.withLock { state.level = newValue } }
    }

    /// Where lines go (stderr by default); tests capture them here.
    public static func setSink(_ sink: @escaping Sink) { state.lock.withLock { state.sink = sink } }

    /// Back to writing on stderr.
    public static func resetSink() { setSink(standardError) }

    static func enabled(_ level: LogLevel) -> Bool { level <= self.level }

    static func write(_ level: LogLevel, _ subsystem: String, _ message: String) {
        let sink = state.lock.withLock { state.sink }
        sink(level, subsystem, message)
    }

    /// The default sink: one timestamped line per message on stderr.
    public static let standardError: Sink = { level, subsystem, message in
        let stamp = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
        FileHandle.standardError.write(Data("\(stamp) \(level) \(subsystem): \(message)\n".utf8))
    }
}
