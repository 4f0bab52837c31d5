import CShimToxcore
import CToxcore
import CarrierWire

extension Carrier {
    /// Creates the toxcore instance from the options and the saved state.
    static func makeTox(options: CarrierOptions, saved: NodeStore.Contents?) throws(CarrierError) -> OpaquePointer {
        if options.carrierData != nil, saved != nil {
            throw .invalidArgument("the data directory holds an identity already: import a carrier.data into a new one")
        }
        return try makeTox(options: options, savedata: saved?.toxSavedata ?? options.carrierData?.toxSavedata)
    }

    /// Creates the toxcore instance from the options and toxcore's own savedata, if any.
    static func makeTox(options: CarrierOptions, savedata saved: [UInt8]?) throws(CarrierError) -> OpaquePointer {
        var optionsError = TOX_ERR_OPTIONS_NEW_OK
        guard let toxOptions = tox_options_new(&optionsError) else {
            throw .tox(function: "tox_options_new", code: Int(optionsError.rawValue))
        }
        defer { tox_options_free(toxOptions) }
        tox_options_set_ipv6_enabled(toxOptions, false)
        tox_options_set_udp_enabled(toxOptions, options.udpEnabled)
        tox_options_set_local_discovery_enabled(toxOptions, !options.loopbackOnly)
        // toxcore takes the first free port of its range. A node that starts
        // again on the port it just left is slow to be found by its friends
        // (field notes: minutes), so by default start at a random point.
        let ports = options.udpPorts ?? Self.randomPortRange()
        tox_options_set_start_port(toxOptions, ports.lowerBound)
        tox_options_set_end_port(toxOptions, ports.upperBound)
        tox_options_set_tcp_port(toxOptions, options.tcpRelayPort ?? 0)
        if options.carrierFraming {
            // Our own socket functions under toxcore add and check the magic (CShimToxcore).
            guard let system = cshim_carrier_system() else {
                throw .invalidArgument(
                    "the Carrier framing needs toxcore 0.2.18 (this is \(tox_version_major()).\(tox_version_minor()).\(tox_version_patch()))"
                )
            }
            tox_options_set_operating_system(toxOptions, system)
        }

        let savedata: [UInt8]
        if let saved {
            savedata = saved
            tox_options_set_savedata_type(toxOptions, TOX_SAVEDATA_TYPE_TOX_SAVE)
        } else if let secretKey = options.secretKey {
            savedata = secretKey
            tox_options_set_savedata_type(toxOptions, TOX_SAVEDATA_TYPE_SECRET_KEY)
        } else {
            savedata = []
        }
        var error = TOX_ERR_NEW_OK
        let tox = savedata.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            if !buffer.isEmpty {
                tox_options_set_savedata_data(toxOptions, buffer.baseAddress, buffer.count)
            }
            return tox_new(toxOptions, &error)
        }
        guard let tox else {
            switch error {
            case TOX_ERR_NEW_PORT_ALLOC:
                throw .invalidArgument(
                    "no free UDP port in \(ports.lowerBound)...\(ports.upperBound) (or the TCP relay port is taken); choose another port"
                )
            case TOX_ERR_NEW_LOAD_BAD_FORMAT, TOX_ERR_NEW_LOAD_ENCRYPTED:
                throw .storage("the saved toxcore state cannot be loaded (error \(error.rawValue))")
            default:
                throw .tox(function: "tox_new", code: Int(error.rawValue))
            }
        }
        if let secretKey = options.secretKey {
            var current = [UInt8](repeating: 0, count: 32)
            tox_self_get_secret_key(tox, &current)
            guard current == secretKey else {
                tox_kill(tox)
                throw .storage(
                    "\(options.dataDirectory ?? "the data directory") already holds another identity; import into an empty directory"
                )
            }
        }
        return tox
    }

    /// 100 ports from a random start in 33445...34444 (toxcore's default is 33445...33545).
    static func randomPortRange() -> ClosedRange<UInt16> {
        let start = UInt16.random(in: 33445...34444)
        return start...(start + 99)
    }

    /// Reads the friend list toxcore restored from the savedata.
    static func readFriends(tox: OpaquePointer) -> [(UserId, FriendState)] {
        let count = tox_self_get_friend_list_size(tox)
        var numbers = [UInt32](repeating: 0, count: count)
        tox_self_get_friend_list(tox, &numbers)
        return numbers.compactMap { readFriend(tox: tox, number: $0) }
    }

    @discardableResult
    func registerFriend(number: UInt32) -> UserId? {
        guard let (id, state) = Self.readFriend(tox: tox, number: number) else { return nil }
        friends[id] = state
        friendIds[number] = id
        refreshContacts()
        return id
    }

    static func readFriend(tox: OpaquePointer, number: UInt32) -> (UserId, FriendState)? {
        var key = [UInt8](repeating: 0, count: 32)
        guard tox_friend_get_public_key(tox, number, &key, nil), let id = UserId(publicKey: key) else { return nil }
        var state = FriendState(number: number)
        let length = tox_friend_get_status_message_size(tox, number, nil)
        if length > 0, length <= CarrierLimits.maxUserInfoPacket {
            var bytes = [UInt8](repeating: 0, count: length)
            if tox_friend_get_status_message(tox, number, &bytes, nil), let info = UserInfo(statusMessage: bytes) {
                state.info = info
            }
        }
        return (id, state)
    }

    /// Hands queued packets to toxcore until its congestion window is full.
    /// Carrier packets go as friend messages (one packet each, as Carrier
    /// sends them), our extras as lossless custom packets; both ride
    /// net_crypto's one ordered lossless stream and its congestion window,
    /// which refuses a packet with `SENDQ` when full: the rest waits here.
    func flushOutgoing() {
        guard !killed else { return }
        for number in Array(outgoing.keys) {
            guard var queue = outgoing.removeValue(forKey: number) else { continue }
            defer { if !queue.isEmpty { outgoing[number] = queue } }
            while let packet = queue.first {
                let outcome = send(packet, to: number)
                if case .full = outcome { break }
                if case .refused(let reason) = outcome {
                    for id in queue.removeAll() { finishReceipt(id, .error(reason)) }
                    break
                }
                queue.removeFirst()
                if let receipt = packet.receipt {
                    receipts[receipt]?.deadline = clock.now + options.receiptTimeout
                    if case .sent(let toxId?) = outcome { toxReceipts[number, default: [:]][toxId] = receipt }
                }
            }
        }
    }

    private enum SendOutcome {
        /// Sent; a friend message has toxcore's message id (its read receipt's).
        case sent(UInt32?)
        case full
        case refused(String)
    }

    private func send(_ packet: OutgoingQueue.Packet, to number: UInt32) -> SendOutcome {
        switch packet.route {
        case .friendMessage:
            var error = TOX_ERR_FRIEND_SEND_MESSAGE_OK
            let toxId = packet.bytes.withUnsafeBufferPointer { buffer in
                tox_friend_send_message(tox, number, TOX_MESSAGE_TYPE_NORMAL, buffer.baseAddress, buffer.count, &error)
            }
            switch error {
            case TOX_ERR_FRIEND_SEND_MESSAGE_OK: return .sent(toxId)
            case TOX_ERR_FRIEND_SEND_MESSAGE_SENDQ: return .full
            case TOX_ERR_FRIEND_SEND_MESSAGE_FRIEND_NOT_CONNECTED: return .refused("the friend went offline")
            default: return .refused("toxcore refused the message (error \(error.rawValue))")
            }
        case .customPacket:
            var error = TOX_ERR_FRIEND_CUSTOM_PACKET_OK
            let sent = packet.bytes.withUnsafeBufferPointer { buffer in
                tox_friend_send_lossless_packet(tox, number, buffer.baseAddress, buffer.count, &error)
            }
            if error == TOX_ERR_FRIEND_CUSTOM_PACKET_SENDQ { return .full }
            guard sent else {
                return .refused(
                    error == TOX_ERR_FRIEND_CUSTOM_PACKET_FRIEND_NOT_CONNECTED
                        ? "the friend went offline" : "toxcore refused the packet (error \(error.rawValue))")
            }
            return .sent(nil)
        }
    }
}
