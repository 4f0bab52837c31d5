import RtcPeer

/// What the file protocols need of a channel: reliable, ordered text and
/// binary messages, a send buffer to watch, and its events. A WebRTC
/// `DataChannel` is one; tests join two endpoints with an in-memory pair, so
/// the protocols are tested without SCTP.
public protocol MessageChannel: AnyObject, Sendable {
    /// The protocol the opener named (DCEP's protocol field).
    var protocolName: String { get }
    /// Open, messages, buffer drained, closed: one stream, read once.
    var events: AsyncStream<DataChannel.Event> { get }
    /// Whether messages can go now.
    var readyState: DataChannel.ReadyState { get }
    /// Bytes queued and not yet taken by the transport.
    var bufferedAmount: Int { get }
    /// Bytes sent that the peer may not have yet (progress as the peer has it).
    var unacknowledgedAmount: Int { get }
    /// `.bufferedAmountLow` comes when the buffered amount falls to this or below.
    var bufferedAmountLowThreshold: Int { get set }
    /// Sends a text message.
    func send(_ text: String) throws(DataChannelError)
    /// Sends a binary message.
    func send(_ data: [UInt8]) throws(DataChannelError)
}

extension DataChannel: MessageChannel {
    /// The DCEP protocol of the channel.
    public var protocolName: String { parameters.protocol }
}
