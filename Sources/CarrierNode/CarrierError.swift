/// Errors the node's API throws. Each says what went wrong and, where it
/// helps, what to do about it.
public enum CarrierError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidAddress(String)
    case invalidUserId(String)
    case invalidArgument(String)
    case tooLong(String)
    case notFriend(String)
    case alreadyFriend(String)
    case friendOffline(String)
    case unknownExtension(String)
    case noSuchGroup(String)
    case noSuchInvite
    case queueFull(String)
    case notRunning
    case timedOut(String)
    /// A service said it does not offer what was asked (an Express node without TURN).
    case unavailable(String)
    case storage(String)
    case tox(function: String, code: Int)

    /// What went wrong, in words for a log or a user.
    public var description: String {
        switch self {
        case .invalidAddress(let text):
            "not a valid address: \(text) (an address is 38 bytes in base58, from `carrier id`)"
        case .invalidUserId(let text): "not a valid user id: \(text) (a user id is a 32-byte key in base58)"
        case .invalidArgument(let why): "invalid argument: \(why)"
        case .tooLong(let why): "too long: \(why)"
        case .notFriend(let id): "\(id) is not a friend: add it with `carrier friend add ADDRESS` first"
        case .alreadyFriend(let id): "\(id) is already a friend"
        case .friendOffline(let id): "\(id) is offline; try again once it is connected"
        case .unknownExtension(let name): "no extension named \(name) is registered"
        case .noSuchGroup(let id): "no group \(id)"
        case .noSuchInvite: "no pending invite with that id (already answered, or expired)"
        case .queueFull(let id): "the send queue to \(id) is full; wait for receipts before sending more"
        case .notRunning: "the node is not running"
        case .timedOut(let what): "timed out: \(what)"
        case .unavailable(let what): what
        case .storage(let why): "data directory: \(why)"
        case .tox(let function, let code): "toxcore \(function) failed with error \(code)"
        }
    }
}
