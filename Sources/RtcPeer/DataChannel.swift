import Foundation
import RtcSCTP

// How a channel delivers (the W3C RTCDataChannelInit) and how a send fails are
// part of this layer's API, though SCTP defines them: callers of the peer
// connection need not import SCTP.
@_exported import enum RtcSCTP.DataChannelError
@_exported import struct RtcSCTP.DataChannelParameters

/// A WebRTC data channel (the RTCDataChannel of the W3C API). Sends go
/// straight to SCTP; events arrive on `events`.
public final class DataChannel: @unchecked Sendable {
    /// What happens on the channel, in order.
    public enum Event: Sendable, Equatable {
        case open
        case text(String)
        case binary([UInt8])
        case bufferedAmountLow
        case closed
    }

    /// The W3C readyState: sends work only while open.
    public enum ReadyState: Sendable, Equatable { case connecting, open, closing, closed }

    /// How it was opened: label, protocol, ordering, reliability.
    public let parameters: DataChannelParameters
    /// The largest message a channel sends or takes, bytes (the `max-message-size` we offer).
    public static let maxMessageSize = SctpAssociation.maxMessageSize
    /// The channel's label.
    public var label: String { parameters.label }
    /// The channel's events, for one reader.
    public let events: AsyncStream<Event>
    private let sink: AsyncStream<Event>.Continuation
    // Guarded by `lock`: the SCTP queue and callers touch them.
    private let lock = NSLock()
    private var association: SctpAssociation?
    private var streamId: UInt16?
    private var state = ReadyState.connecting
    private var lowThreshold = 0

    init(parameters: DataChannelParameters) {
        self.parameters = parameters
        (events, sink) = AsyncStream<Event>.makeStream()
    }

    /// The SCTP stream id, once the channel has one.
    public var id: UInt16? { lock.withLock { streamId } }
    /// Where the channel is now.
    public var readyState: ReadyState { lock.withLock { state } }

    /// Sends text (PPID 51).
    public func send(_ text: String) throws(DataChannelError) { try send(Array(text.utf8), binary: false) }

    /// Sends bytes (PPID 53).
    public func send(_ data: [UInt8]) throws(DataChannelError) { try send(data, binary: true) }

    private func send(_ data: [UInt8], binary: Bool) throws(DataChannelError) {
        let (association, id, state) = lock.withLock { (self.association, streamId, self.state) }
        guard state == .open, let association, let id else { throw .notOpen(streamId ?? 0) }
        try association.send(data, binary: binary, on: id)
    }

    /// Bytes queued and not yet taken by SCTP.
    public var bufferedAmount: Int {
        let (association, id) = lock.withLock { (self.association, streamId) }
        guard let association, let id else { return 0 }
        return association.bufferedAmount(of: id)
    }

    /// Bytes sent on this channel that the peer may not have yet: the buffered
    /// amount plus what SCTP holds unacknowledged (for the whole association,
    /// so an upper bound when other channels send too). Blocks briefly on the
    /// SCTP queue.
    public var unacknowledgedAmount: Int {
        let (association, id) = lock.withLock { (self.association, streamId) }
        guard let association, let id else { return 0 }
        return association.bufferedAmount(of: id) + association.unacknowledgedBytes
    }

    /// `.bufferedAmountLow` fires when the buffered amount falls to this or below.
    public var bufferedAmountLowThreshold: Int {
        get { lock.withLock { lowThreshold } }
        set {
            let (association, id) = lock.withLock { () -> (SctpAssociation?, UInt16?) in
                lowThreshold = newValue
                return (self.association, streamId)
            }
            if let association, let id { association.setBufferedAmountLowThreshold(newValue, on: id) }
        }
    }

    /// Closes the channel (both directions, RFC 8831 §6.7); `.closed` follows.
    public func close() {
        let (association, id) = lock.withLock { () -> (SctpAssociation?, UInt16?) in
            guard state == .open || state == .connecting else { return (nil, nil) }
            state = .closing
            return (self.association, streamId)
        }
        if let association, let id { association.closeChannel(id) } else { didClose() }
    }

    // MARK: From the peer connection (SCTP queue)

    func bind(association: SctpAssociation, id: UInt16) {
        let threshold = lock.withLock {
            self.association = association
            streamId = id
            return lowThreshold
        }
        if threshold > 0 { association.setBufferedAmountLowThreshold(threshold, on: id) }
    }

    func didOpen() {
        let opened = lock.withLock {
            guard state == .connecting else { return false }
            state = .open
            return true
        }
        if opened { sink.yield(.open) }
    }

    func didReceive(_ data: [UInt8], binary: Bool) {
        sink.yield(binary ? .binary(data) : .text(String(decoding: data, as: UTF8.self)))
    }

    func didDrain() { sink.yield(.bufferedAmountLow) }

    func didClose() {
        let closed = lock.withLock {
            guard state != .closed else { return false }
            state = .closed
            return true
        }
        if closed {
            sink.yield(.closed)
            sink.finish()
        }
    }
}
