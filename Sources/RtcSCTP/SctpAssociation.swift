import CUsrsctp
import Dispatch
import Foundation

/// One SCTP association over DTLS (RFC 8261) carrying WebRTC data channels
/// (RFC 8831, DCEP per RFC 8832), on usrsctp.
///
/// Threading: every method may be called from any thread; the work runs on
/// the process-wide SCTP queue. `onOutbound` (SCTP packets to encrypt and
/// send) and `onEvent` are called on that queue: hop off it before doing
/// anything slow.
public final class SctpAssociation: @unchecked Sendable {
    /// What the association reports, on its queue.
    public enum Event: Sendable, Equatable {
        case connected
        case channelOpen(id: UInt16, parameters: DataChannelParameters, remote: Bool)
        case message(id: UInt16, data: [UInt8], binary: Bool)
        /// The channel's buffered amount fell to or below its low-water mark.
        case bufferedAmountLow(id: UInt16)
        case channelClosed(id: UInt16)
        case closed(reason: String)
    }

    /// What usrsctp adds to a path MTU over AF_CONN: its packets are the
    /// `spp_pathmtu` they are given plus the 12-byte common header (measured:
    /// PathMtuOnTheWireTests sees 16000-byte packets for a 15988 MTU).
    static let packetOverhead = 12

    /// Send and receive buffer of each socket.
    static let socketBuffer = 4 << 20
    /// The largest message we accept (advertised as `a=max-message-size`).
    public static let maxMessageSize = 1 << 20

    /// Our SCTP port (`a=sctp-port`, 5000 unless the SDP says otherwise).
    public let localPort: UInt16
    /// The peer's SCTP port, from its SDP.
    public let remotePort: UInt16
    private let onOutbound: @Sendable ([UInt8]) -> Void
    private let onEvent: @Sendable (Event) -> Void
    private let stack = SctpStack.shared
    /// Our registered usrsctp address: a unique pointer identifying this association.
    private let address: UnsafeMutableRawPointer

    // Everything below is touched only on the SCTP queue.
    private var socket: OpaquePointer?
    private var registry: DataChannelRegistry
    private var connected = false
    private var finished = false
    /// What callbacks collected during a usrsctp call, handled after it returns
    /// (usrsctp must not be re-entered from its own callbacks).
    private var pendingReceives: [(stream: UInt16, ppid: UInt32, data: [UInt8], flags: Int32)] = []
    private var partial: [UInt16: [UInt8]] = [:]
    private var sendable = false
    /// Messages usrsctp had no room for yet, in order.
    private var sendQueue: [(id: UInt16, ppid: Ppid, data: [UInt8], unordered: Bool, policy: UInt16, value: UInt32)] =
        []
    private var sendQueueHead = 0
    private var buffered: [UInt16: Int] = [:]
    private var lowWater: [UInt16: Int] = [:]
    /// Channels closed while messages of theirs still wait in `sendQueue`: their
    /// stream is reset once those are handed to usrsctp (a reset stream takes no more).
    private var resetsAfterFlush: Set<UInt16> = []
    private var remoteMaxMessageSize = 65536
    /// Packets dropped because their CRC32C was wrong.
    private var badChecksums = 0

    /// What other threads may read: buffered amounts and the peer's message limit.
    private struct Shared {
        var buffered: [UInt16: Int] = [:]
        var remoteMaxMessageSize = 65536
    }
    private let sharedLock = NSLock()
    private var shared = Shared()

    /// An association over DTLS: `onOutbound` gets each SCTP packet to encrypt and send, `onEvent` what happens; the DTLS client connects, the server listens.
    public init(
        isDtlsClient: Bool, localPort: UInt16 = 5000, remotePort: UInt16 = 5000,
        onOutbound: @escaping @Sendable ([UInt8]) -> Void, onEvent: @escaping @Sendable (Event) -> Void
    ) {
        self.localPort = localPort
        self.remotePort = remotePort
        self.onOutbound = onOutbound
        self.onEvent = onEvent
        registry = DataChannelRegistry(isDtlsClient: isDtlsClient)
        address = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
    }

    deinit { address.deallocate() }

    /// Opens the socket and starts the association (both sides connect, as
    /// WebRTC does). Call once DTLS is up, before feeding packets.
    /// `remoteMaxMessageSize` is the peer's `a=max-message-size` (0: no limit).
    /// `packetSize` raises the largest SCTP packet above usrsctp's default
    /// (about 1200 bytes): only for a path known to carry it (a probe).
    public func start(remoteMaxMessageSize: UInt64 = 65536, packetSize: Int? = nil) {
        stack.queue.async { [self] in
            self.remoteMaxMessageSize =
                remoteMaxMessageSize == 0 ? Int.max : Int(min(remoteMaxMessageSize, UInt64(Int.max)))
            sharedLock.withLock { shared.remoteMaxMessageSize = self.remoteMaxMessageSize }
            stack.register(self, address: address)
            guard openSocket(packetSize: packetSize) else {
                finish(reason: "cannot open the SCTP socket")
                return
            }
        }
    }

    /// Feeds one SCTP packet that came out of DTLS.
    public func receive(_ packet: [UInt8]) {
        stack.queue.async { [self] in
            guard socket != nil, !finished else { return }
            packet.withUnsafeBytes { bytes in
                // usrsctp no longer checks the checksum (offloaded to us, see SctpStack).
                guard SctpChecksum.isValid(bytes) else {
                    badChecksums += 1
                    return
                }
                stack.noteActivity()
                usrsctp_conninput(address, bytes.baseAddress, bytes.count, 0)
            }
            drain()
        }
    }

    /// Creates a channel; `.channelOpen` follows (at once for a negotiated one,
    /// on the peer's ACK otherwise). Returns the stream id through `completion`.
    public func openChannel(
        _ parameters: DataChannelParameters, completion: @escaping @Sendable (Result<UInt16, DataChannelError>) -> Void
    ) {
        stack.queue.async { [self] in
            do throws(DataChannelError) {
                let (channel, dcep) = try registry.create(parameters)
                completion(.success(channel.id))
                if let dcep {
                    enqueue(id: channel.id, ppid: .dcep, data: dcep.encoded(), parameters: parameters)
                } else {
                    onEvent(.channelOpen(id: channel.id, parameters: parameters, remote: false))
                }
                flush()
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// Queues a message; it goes out in order with the channel's reliability.
    public func send(_ data: [UInt8], binary: Bool, on id: UInt16) throws(DataChannelError) {
        let limit = sharedLock.withLock { shared.remoteMaxMessageSize }
        guard data.count <= limit else { throw .tooLarge(data.count, limit: limit) }
        stack.queue.async { [self] in
            guard let channel = registry.channel(id), channel.state != .closing else { return }
            let (ppid, payload) = DataChannelRegistry.outgoing(data, binary: binary)
            enqueue(id: id, ppid: ppid, data: payload, parameters: channel.parameters)
            flush()
        }
    }

    /// Incoming packets dropped because their checksum was wrong (corrupted
    /// or not SCTP). Blocks until the SCTP queue answers: do not call it from
    /// an `onEvent` or `onOutbound` handler.
    public var checksumFailures: Int { stack.queue.sync { badChecksums } }

    /// About how many bytes usrsctp holds that the peer has not acknowledged
    /// (sent and awaiting a SACK, or waiting to be sent), for the whole
    /// association: its DATA chunks counted at the fragmentation point, so an
    /// upper bound. Blocks until the SCTP queue answers: not from a handler.
    public var unacknowledgedBytes: Int {
        stack.queue.sync { [self] in
            guard let socket else { return 0 }
            var status = sctp_status()
            var length = socklen_t(MemoryLayout<sctp_status>.size)
            guard usrsctp_getsockopt(socket, Int32(IPPROTO_SCTP), SCTP_STATUS, &status, &length) == 0 else { return 0 }
            return (Int(status.sstat_unackdata) + Int(status.sstat_penddata)) * Int(status.sstat_fragmentation_point)
        }
    }

    /// Bytes queued on a channel and not yet taken by SCTP.
    public func bufferedAmount(of id: UInt16) -> Int {
        sharedLock.withLock { shared.buffered[id] ?? 0 }
    }

    /// `.bufferedAmountLow` fires when the channel's buffered amount falls to `bytes` or below.
    public func setBufferedAmountLowThreshold(_ bytes: Int, on id: UInt16) {
        stack.queue.async { [self] in lowWater[id] = bytes }
    }

    /// Closes a channel by resetting its outgoing stream (RFC 8831 §6.7), after
    /// the messages already sent on it: as the W3C's close, what was queued
    /// still goes (a last "cancel" behind megabytes of a file arrives).
    public func closeChannel(_ id: UInt16) {
        stack.queue.async { [self] in
            guard registry.channel(id) != nil else { return }
            registry.markClosing(id)
            if sendQueue[sendQueueHead...].contains(where: { $0.id == id }) {
                resetsAfterFlush.insert(id)
            } else {
                resetStream(id)
            }
        }
    }

    /// Aborts the association and frees the socket.
    public func close() {
        stack.queue.async { [self] in finish(reason: "closed") }
    }

    // MARK: On the SCTP queue

    func outbound(_ packet: [UInt8]) { onOutbound(packet) }

    private func openSocket(packetSize: Int?) -> Bool {
        let receive:
            @convention(c) (
                OpaquePointer?, sctp_sockstore, UnsafeMutableRawPointer?, Int, sctp_rcvinfo, Int32,
                UnsafeMutableRawPointer?
            ) -> Int32 = { _, _, data, length, info, flags, user in
                guard let user else {
                    free(data)
                    return 1
                }
                let association = Unmanaged<SctpAssociation>.fromOpaque(user).takeUnretainedValue()
                if let data {
                    let bytes = Array(UnsafeRawBufferPointer(start: data, count: length))
                    association.pendingReceives.append((info.rcv_sid, UInt32(bigEndian: info.rcv_ppid), bytes, flags))
                    free(data)
                }
                return 1
            }
        let space: @convention(c) (OpaquePointer?, UInt32, UnsafeMutableRawPointer?) -> Int32 = { _, _, user in
            guard let user else { return 0 }
            Unmanaged<SctpAssociation>.fromOpaque(user).takeUnretainedValue().sendable = true
            return 0
        }
        let user = Unmanaged.passUnretained(self).toOpaque()
        guard
            let socket = usrsctp_socket(
                AF_CONN, Int32(SOCK_STREAM.rawValue), Int32(IPPROTO_SCTP), receive, space,
                UInt32(Self.socketBuffer / 2), user)
        else { return false }
        self.socket = socket
        usrsctp_set_non_blocking(socket, 1)
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setOption(SOL_SOCKET, SO_LINGER, &linger)
        var one: Int32 = 1
        setOption(Int32(IPPROTO_SCTP), SCTP_NODELAY, &one)
        setOption(Int32(IPPROTO_SCTP), SCTP_RECVRCVINFO, &one)
        var reset = sctp_assoc_value(
            assoc_id: UInt32(SCTP_ALL_ASSOC), assoc_value: UInt32(SCTP_ENABLE_RESET_STREAM_REQ))
        setOption(Int32(IPPROTO_SCTP), SCTP_ENABLE_STREAM_RESET, &reset)
        var streams = sctp_initmsg(
            sinit_num_ostreams: 1024, sinit_max_instreams: 1024, sinit_max_attempts: 0, sinit_max_init_timeo: 0)
        setOption(Int32(IPPROTO_SCTP), SCTP_INITMSG, &streams)
        for type in [SCTP_ASSOC_CHANGE, SCTP_STREAM_RESET_EVENT] {
            var event = sctp_event(se_assoc_id: UInt32(SCTP_ALL_ASSOC), se_type: UInt16(type), se_on: 1)
            setOption(Int32(IPPROTO_SCTP), SCTP_EVENT, &event)
        }
        if let packetSize {
            // At endpoint level before connecting: usrsctp takes the association's
            // smallest MTU from here and never raises it later.
            var parameters = sctp_paddrparams()
            parameters.spp_assoc_id = UInt32(SCTP_FUTURE_ASSOC)
            parameters.spp_pathmtu = UInt32(clamping: packetSize - Self.packetOverhead)
            parameters.spp_flags = UInt32(SPP_PMTUD_DISABLE)
            setOption(Int32(IPPROTO_SCTP), SCTP_PEER_ADDR_PARAMS, &parameters)
        }
        var local = connAddress(port: localPort)
        var remote = connAddress(port: remotePort)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                usrsctp_bind(socket, UnsafeMutablePointer(mutating: $0), socklen_t(MemoryLayout<sockaddr_conn>.size))
            }
        }
        guard bound == 0 else { return false }
        let result = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                usrsctp_connect(socket, UnsafeMutablePointer(mutating: $0), socklen_t(MemoryLayout<sockaddr_conn>.size))
            }
        }
        return result == 0 || errno == EINPROGRESS
    }

    private func connAddress(port: UInt16) -> sockaddr_conn {
        var address = sockaddr_conn()
        address.sconn_family = UInt16(AF_CONN)
        address.sconn_port = port.bigEndian
        // Both ends name our own registered address: usrsctp routes by it (field notes).
        address.sconn_addr = self.address
        return address
    }

    private func setOption<T: BitwiseCopyable>(_ level: Int32, _ name: Int32, _ value: inout T) {
        guard let socket else { return }
        _ = withUnsafeBytes(of: &value) { usrsctp_setsockopt(socket, level, name, $0.baseAddress, socklen_t($0.count)) }
    }

    /// Handles what usrsctp's callbacks collected, then sends what can go.
    func drain() {
        while !pendingReceives.isEmpty {
            let batch = pendingReceives
            pendingReceives = []
            for item in batch { handle(stream: item.stream, ppid: item.ppid, data: item.data, flags: item.flags) }
        }
        if sendable {
            sendable = false
            flush()
        }
    }

    private func handle(stream: UInt16, ppid: UInt32, data: [UInt8], flags: Int32) {
        if flags & Int32(MSG_NOTIFICATION) != 0 {
            handleNotification(data)
            return
        }
        // Large messages may arrive in parts (partial delivery); join them until EOR.
        var message = data
        if flags & Int32(MSG_EOR) == 0 || partial[stream] != nil {
            var joined = partial[stream] ?? []
            joined += data
            guard joined.count <= Self.maxMessageSize else {
                partial[stream] = nil
                closeChannel(stream)
                return
            }
            guard flags & Int32(MSG_EOR) != 0 else {
                partial[stream] = joined
                return
            }
            partial[stream] = nil
            message = joined
        }
        for action in registry.receive(stream: stream, ppid: ppid, data: message) {
            switch action {
            case .sendDcep(let id, let dcep):
                if let channel = registry.channel(id) {
                    enqueue(id: id, ppid: .dcep, data: dcep.encoded(), parameters: channel.parameters)
                    flush()
                }
            case .opened(let channel, let remote):
                onEvent(.channelOpen(id: channel.id, parameters: channel.parameters, remote: remote))
            case .message(let id, let bytes, let binary):
                onEvent(.message(id: id, data: bytes, binary: binary))
            case .ignored:
                break
            }
        }
    }

    private func handleNotification(_ data: [UInt8]) {
        guard data.count >= 8 else { return }
        let type = data.withUnsafeBytes { $0.loadUnaligned(as: UInt16.self) }
        switch Int32(type) {
        case SCTP_ASSOC_CHANGE:
            guard data.count >= MemoryLayout<sctp_assoc_change>.size else { return }
            let change = data.withUnsafeBytes { $0.loadUnaligned(as: sctp_assoc_change.self) }
            switch Int32(change.sac_state) {
            case SCTP_COMM_UP:
                guard !connected else { return }
                connected = true
                onEvent(.connected)
                flush()
            case SCTP_COMM_LOST, SCTP_SHUTDOWN_COMP, SCTP_CANT_STR_ASSOC:
                finish(reason: "association lost (state \(change.sac_state))")
            default:
                break
            }
        case SCTP_STREAM_RESET_EVENT:
            let header = MemoryLayout<sctp_stream_reset_event>.size
            guard data.count >= header else { return }
            let event = data.withUnsafeBytes { $0.loadUnaligned(as: sctp_stream_reset_event.self) }
            let flags = Int32(event.strreset_flags)
            guard flags & (SCTP_STREAM_RESET_DENIED | SCTP_STREAM_RESET_FAILED) == 0 else { return }
            var streams: [UInt16] = []
            var offset = header
            while offset + 2 <= min(data.count, Int(event.strreset_length)) {
                streams.append(data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt16.self) })
                offset += 2
            }
            for id in streams where registry.channel(id) != nil {
                if flags & SCTP_STREAM_RESET_INCOMING_SSN != 0, registry.channel(id)?.state != .closing {
                    // The peer closed its side: close ours too (RFC 8831 §6.7).
                    registry.markClosing(id)
                    resetStream(id)
                }
                if flags & SCTP_STREAM_RESET_OUTGOING_SSN != 0 || flags & SCTP_STREAM_RESET_INCOMING_SSN != 0 {
                    if registry.channel(id)?.state == .closing, flags & SCTP_STREAM_RESET_INCOMING_SSN != 0 {
                        registry.remove(id)
                        onEvent(.channelClosed(id: id))
                    }
                }
            }
        default:
            break
        }
    }

    private func resetStream(_ id: UInt16) {
        guard let socket else { return }
        let size = MemoryLayout<sctp_reset_streams>.size + 2
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { raw.deallocate() }
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        let request = raw.assumingMemoryBound(to: sctp_reset_streams.self)
        request.pointee.srs_assoc_id = UInt32(SCTP_ALL_ASSOC)
        request.pointee.srs_flags = UInt16(SCTP_STREAM_RESET_OUTGOING)
        request.pointee.srs_number_streams = 1
        raw.storeBytes(of: id, toByteOffset: MemoryLayout<sctp_reset_streams>.size, as: UInt16.self)
        _ = usrsctp_setsockopt(socket, Int32(IPPROTO_SCTP), SCTP_RESET_STREAMS, raw, socklen_t(size))
    }

    private func enqueue(id: UInt16, ppid: Ppid, data: [UInt8], parameters: DataChannelParameters) {
        let policy =
            parameters.maxRetransmits != nil
            ? UInt16(SCTP_PR_SCTP_RTX)
            : parameters.maxLifetimeMilliseconds != nil ? UInt16(SCTP_PR_SCTP_TTL) : UInt16(SCTP_PR_SCTP_NONE)
        // DCEP messages are always sent ordered and reliably (RFC 8832 §6).
        let isDcep = ppid == .dcep
        sendQueue.append(
            (
                id, ppid, data, isDcep ? false : !parameters.ordered, isDcep ? UInt16(SCTP_PR_SCTP_NONE) : policy,
                isDcep ? 0 : parameters.reliabilityParameter
            ))
        if !isDcep { adjustBuffered(id, by: data.count) }
    }

    /// Hands queued messages to usrsctp until it has no room.
    private func flush() {
        guard let socket, connected else { return }
        while sendQueueHead < sendQueue.count {
            let item = sendQueue[sendQueueHead]
            var info = sctp_sendv_spa()
            info.sendv_flags = UInt32(SCTP_SEND_SNDINFO_VALID | SCTP_SEND_PRINFO_VALID)
            info.sendv_sndinfo.snd_sid = item.id
            info.sendv_sndinfo.snd_ppid = item.ppid.rawValue.bigEndian
            info.sendv_sndinfo.snd_flags = UInt16(SCTP_EOR) | (item.unordered ? UInt16(SCTP_UNORDERED) : 0)
            info.sendv_prinfo.pr_policy = item.policy
            info.sendv_prinfo.pr_value = item.value
            let sent = item.data.withUnsafeBytes { buffer in
                usrsctp_sendv(
                    socket, buffer.baseAddress, buffer.count, nil, 0, &info,
                    socklen_t(MemoryLayout<sctp_sendv_spa>.size),
                    UInt32(SCTP_SENDV_SPA), 0)
            }
            if sent < 0 {
                if errno == EWOULDBLOCK || errno == EAGAIN { break }
                // A message usrsctp refuses for good (stream reset, too large): drop it.
            }
            sendQueueHead += 1
            if item.ppid != .dcep { adjustBuffered(item.id, by: -item.data.count) }
        }
        if !resetsAfterFlush.isEmpty {
            let waiting = Set(sendQueue[sendQueueHead...].map(\.id))
            for id in resetsAfterFlush.subtracting(waiting) {
                resetsAfterFlush.remove(id)
                resetStream(id)
            }
        }
        if sendQueueHead == sendQueue.count {
            sendQueue.removeAll(keepingCapacity: true)
            sendQueueHead = 0
        } else if sendQueueHead > 4096 {
            sendQueue.removeFirst(sendQueueHead)
            sendQueueHead = 0
        }
    }

    private func adjustBuffered(_ id: UInt16, by delta: Int) {
        let before = buffered[id] ?? 0
        let after = max(0, before + delta)
        buffered[id] = after
        sharedLock.withLock { shared.buffered[id] = after }
        if delta < 0, let mark = lowWater[id], before > mark, after <= mark { onEvent(.bufferedAmountLow(id: id)) }
    }

    private func finish(reason: String) {
        guard !finished else { return }
        finished = true
        if let socket { usrsctp_close(socket) }
        socket = nil
        stack.deregister(address: address)
        onEvent(.closed(reason: reason))
    }
}
