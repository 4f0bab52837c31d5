/// A value bound into or read out of either store's database: the three
/// kinds the Express schema uses.
enum DatabaseValue: Equatable {
    case integer(Int64)
    case blob([UInt8])
    case text(String)

    var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
    var blob: [UInt8]? {
        switch self {
        case .blob(let bytes): bytes
        case .text(let text): Array(text.utf8)
        case .integer: nil
        }
    }
}

/// A database refused or failed: the database's own words, without the
/// connection's password.
struct DatabaseFailure: Error, CustomStringConvertible {
    var description: String
}
