import Foundation

/// Where an Express node keeps its store.
public enum ExpressDatabase: Sendable, Equatable, CustomStringConvertible {
    /// In memory (tests): gone, with the node's key, when the node stops.
    case memory
    /// A SQLite file: one node, embedded.
    case sqlite(path: String)
    /// A PostgreSQL database (`postgresql://USER[:PASSWORD]@HOST:PORT/DB`):
    /// every node given the same one acts as one node.
    case postgres(url: String)

    /// `postgresql://…` or `postgres://…` is PostgreSQL; anything else is a SQLite file's path.
    public init(parsing text: String) {
        let lower = text.lowercased()
        if lower.hasPrefix("postgresql://") || lower.hasPrefix("postgres://") {
            self = .postgres(url: text)
        } else {
            self = .sqlite(path: text)
        }
    }

    /// Whether a PostgreSQL URL carries its password (which then sits in
    /// the command line, for every local user to read in `ps`).
    public var holdsPassword: Bool {
        guard case .postgres(let url) = self else { return false }
        return description != url
    }

    /// For logs: a PostgreSQL URL without its password.
    public var description: String {
        switch self {
        case .memory: return "in memory"
        case .sqlite(let path): return path
        case .postgres(let url):
            // postgresql://user:secret@host and ?password=secret both lose the secret.
            return
                url
                .replacingOccurrences(of: "(://[^/:@]*):[^/@]*@", with: "$1:***@", options: .regularExpression)
                .replacingOccurrences(of: "password=[^&]*", with: "password=***", options: .regularExpression)
        }
    }
}
