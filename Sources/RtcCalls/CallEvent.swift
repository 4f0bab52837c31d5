import RtcFileTransfer
import RtcPeer

/// What a call client reports (on `CallClient.events()`).
public enum CallEvent: Sendable {
    /// A friend calls: decide with `accept`, `reject` or `busy` (unless the client answers by itself).
    case incoming(Call)
    case stateChanged(Call)
    /// The call is over (`call.endReason` says why); exactly once per call.
    case ended(Call)
    /// A peer sent something that is not a signal; it was dropped.
    case badSignal(from: String, error: SignalError)
    case fileProgress(callId: String, FileTransferEndpoint.Progress)
    case fileReceived(callId: String, FileTransferEndpoint.Outcome)
    /// A text or binary message the peer sent on the call's data channel (not a file).
    case message(callId: String, FileTransferEndpoint.Message)
    /// The peer opened a data channel for the application (its protocol starts
    /// with `carrier-`; sessions' streams and channels): not the call's file channel.
    case dataChannel(callId: String, DataChannel)
}
