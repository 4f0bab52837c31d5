import RtcFileTransfer
import RtcPeer

extension DataChannel {
    /// Sends one control message of the friend file protocol. A channel that
    /// cannot take it has closed (or is closing): its `.closed` event ends the
    /// transfer on both drivers, and each end then resumes from the bytes on
    /// disk, so the message is dropped here on purpose. Returns whether it went.
    @discardableResult
    func tell(_ message: FriendFileMessage) -> Bool {
        do {
            try send(message.json)
            return true
        } catch {
            return false
        }
    }
}
