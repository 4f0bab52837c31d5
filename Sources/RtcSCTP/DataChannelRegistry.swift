/// The data channels of one association and their DCEP handshake
/// (RFC 8832): which stream ids are free (even for the DTLS client, odd for
/// the server, §6), which channels await an ACK, and what an incoming
/// message means. Pure state: the association feeds it and acts on the results.
struct DataChannelRegistry {
    enum State: Equatable { case opening, open, closing }

    struct Channel: Equatable {
        var id: UInt16
        var parameters: DataChannelParameters
        var state: State
    }

    /// What the association must do after an incoming DCEP or data message.
    enum Action: Equatable {
        /// Send this DCEP message on the stream (an ACK).
        case sendDcep(UInt16, DcepMessage)
        /// A channel is open (remote OPEN accepted, or our OPEN acknowledged).
        case opened(Channel, remote: Bool)
        case message(UInt16, [UInt8], binary: Bool)
        /// Dropped input, with the reason.
        case ignored(String)
    }

    let isDtlsClient: Bool
    /// Streams negotiated at association setup (both directions).
    var streamCount: UInt16 = 1024
    private(set) var channels: [UInt16: Channel] = [:]
    private var nextId: UInt16

    init(isDtlsClient: Bool) {
        self.isDtlsClient = isDtlsClient
        nextId = isDtlsClient ? 0 : 1
    }

    /// Registers a channel we create; returns it (DCEP OPEN to send if not negotiated).
    mutating func create(_ parameters: DataChannelParameters) throws(DataChannelError) -> (Channel, DcepMessage?) {
        let id: UInt16
        if let negotiated = parameters.negotiatedId {
            guard negotiated < streamCount else { throw .noStreamAvailable }
            guard channels[negotiated] == nil else { throw .idInUse(negotiated) }
            id = negotiated
        } else {
            guard let free = allocateId() else { throw .noStreamAvailable }
            id = free
        }
        let isNegotiated = parameters.negotiatedId != nil
        let channel = Channel(id: id, parameters: parameters, state: isNegotiated ? .open : .opening)
        channels[id] = channel
        return (channel, isNegotiated ? nil : .open(parameters))
    }

    private mutating func allocateId() -> UInt16? {
        var candidate = nextId
        while candidate < streamCount {
            if channels[candidate] == nil {
                nextId = candidate + 2
                return candidate
            }
            candidate += 2
        }
        return nil
    }

    /// Handles one message received on stream `id` with its PPID.
    mutating func receive(stream id: UInt16, ppid: UInt32, data: [UInt8]) -> [Action] {
        switch Ppid(rawValue: ppid) {
        case .dcep:
            guard let message = DcepMessage(data) else { return [.ignored("malformed DCEP message on stream \(id)")] }
            switch message {
            case .open(let parameters):
                guard channels[id] == nil else { return [.ignored("DCEP OPEN for stream \(id), which is in use")] }
                // The peer's ids have the other parity; an OPEN on ours would clash.
                guard id % 2 != (isDtlsClient ? 0 : 1) else {
                    return [.ignored("DCEP OPEN on a stream id of our parity")]
                }
                let channel = Channel(id: id, parameters: parameters, state: .open)
                channels[id] = channel
                return [.sendDcep(id, .ack), .opened(channel, remote: true)]
            case .ack:
                guard var channel = channels[id], channel.state == .opening else {
                    return [.ignored("DCEP ACK for stream \(id), which awaits none")]
                }
                channel.state = .open
                channels[id] = channel
                return [.opened(channel, remote: false)]
            }
        case .string, .binary, .emptyString, .emptyBinary:
            guard let channel = channels[id], channel.state != .closing else {
                return [.ignored("data on stream \(id), which has no open channel")]
            }
            let binary = ppid == Ppid.binary.rawValue || ppid == Ppid.emptyBinary.rawValue
            let empty = ppid == Ppid.emptyString.rawValue || ppid == Ppid.emptyBinary.rawValue
            // Data may follow an OPEN before its ACK arrives (RFC 8832 §6): that also opens it.
            var actions: [Action] = []
            if channel.state == .opening {
                channels[id]?.state = .open
                actions.append(.opened(channels[id]!, remote: false))
            }
            actions.append(.message(id, empty ? [] : data, binary: binary))
            return actions
        case nil:
            return [.ignored("unknown PPID \(ppid) on stream \(id)")]
        }
    }

    mutating func markClosing(_ id: UInt16) { channels[id]?.state = .closing }

    mutating func remove(_ id: UInt16) { channels[id] = nil }

    func channel(_ id: UInt16) -> Channel? { channels[id] }

    /// PPID and payload for an outgoing message (an empty one is sent as one zero byte, RFC 8831 §6.6).
    static func outgoing(_ data: [UInt8], binary: Bool) -> (Ppid, [UInt8]) {
        if data.isEmpty { return (binary ? .emptyBinary : .emptyString, [0]) }
        return (binary ? .binary : .string, data)
    }
}

/// Why a data channel could not be opened or could not send.
public enum DataChannelError: Error, Equatable, Sendable, CustomStringConvertible {
    case noStreamAvailable
    case idInUse(UInt16)
    case notOpen(UInt16)
    case tooLarge(Int, limit: Int)
    case associationClosed
    case sctp(String)

    /// What went wrong, in words for a log or a user.
    public var description: String {
        switch self {
        case .noStreamAvailable: "no free SCTP stream for another data channel"
        case .idInUse(let id): "data channel id \(id) is in use"
        case .notOpen(let id): "data channel \(id) is not open"
        case .tooLarge(let size, let limit): "message of \(size) bytes is over the peer's max-message-size \(limit)"
        case .associationClosed: "the SCTP association is closed"
        case .sctp(let why): "SCTP: \(why)"
        }
    }
}
