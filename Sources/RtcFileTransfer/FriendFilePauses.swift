/// Who has paused a friend file transfer, for either side's state machine:
/// each side resumes only its own pause, and bytes move while neither holds one.
public struct FriendFilePauses: Sendable, Equatable {
    /// This side paused.
    public private(set) var byUs = false
    /// The other side paused.
    public private(set) var byPeer = false

    /// Whether either side holds a pause.
    public var any: Bool { byUs || byPeer }

    /// This side pauses: the message to send, nil if already paused.
    mutating func pause() -> FriendFileMessage? {
        guard !byUs else { return nil }
        byUs = true
        return .pause
    }

    /// This side resumes: the message to send, nil if it had not paused.
    mutating func resume() -> FriendFileMessage? {
        guard byUs else { return nil }
        byUs = false
        return .resume
    }

    /// The other side's `pause` (true) or `resume` (false): whether it changed anything.
    mutating func peer(paused: Bool) -> Bool {
        guard byPeer != paused else { return false }
        byPeer = paused
        return true
    }
}
