import CToxcore
import FileSafety

#if canImport(Glibc)
    import Glibc
#endif

/// What toxcore reported during one `tox_iterate`, copied out of its buffers.
enum ToxEvent {
    case selfConnection(connected: Bool)
    case friendRequest(publicKey: [UInt8], payload: [UInt8])
    /// A lossless custom packet (our extras), without its id byte.
    case friendPacket(friend: UInt32, data: [UInt8])
    /// A friend message (`TOX_MESSAGE_TYPE_NORMAL`): one Carrier packet.
    case friendMessage(friend: UInt32, data: [UInt8])
    /// toxcore's receipt for a friend message we sent: the friend's node has it.
    case friendReadReceipt(friend: UInt32, messageId: UInt32)
    case friendConnection(friend: UInt32, link: FriendLink?)
    case friendStatus(friend: UInt32, Presence)
    case friendStatusMessage(friend: UInt32, [UInt8])
    case conferenceInvite(friend: UInt32, cookie: [UInt8])
    case conferenceConnected(conference: UInt32)
    case conferenceMessage(conference: UInt32, peerKey: [UInt8]?, data: [UInt8])
    case conferenceTitle(conference: UInt32, title: [UInt8])
    case conferencePeerListChanged(conference: UInt32)
    /// A friend offers a file: `fileId` is the id the sender chose (ours: the SHA-256).
    case fileOffered(FileSlot, kind: UInt32, size: UInt64, name: [UInt8], fileId: [UInt8])
    case fileControl(FileSlot, Tox_File_Control)
    /// toxcore wants `length` bytes at `position` of a file we send; 0 means all was sent.
    case fileChunkRequest(FileSlot, position: UInt64, length: Int)
    /// A chunk toxcore asked for was read and sent inside its callback (`ToxEventBuffer.chunkSources`).
    case fileChunkSent(FileSlot, position: UInt64, length: Int)
    /// Bytes of a file we receive; empty means the file is complete.
    case fileChunk(FileSlot, position: UInt64, data: [UInt8])
    /// Chunks of a file we receive were written inside the callback
    /// (`ToxEventBuffer.chunkSinks`); one event for a run of them in a row,
    /// `end` where the last ended. `written` false: that write failed.
    case fileChunksWritten(FileSlot, end: UInt64, written: Bool)
}

/// Where the chunks of a file we receive go from inside toxcore's callback.
struct ChunkSink {
    let file: PartialFile
    /// The announced size: a chunk past it is left to the actor, which fails the transfer.
    let size: UInt64
}

/// Collects toxcore's callbacks. toxcore calls them synchronously from inside
/// `tox_iterate`, which only the `Carrier` actor calls, so they run on the
/// actor's executor; the buffer is drained by the actor right after.
final class ToxEventBuffer {
    /// The lossless custom packet id that carries node packets (toxcore allows 160-191).
    static let packetId: UInt8 = 160

    var events: [ToxEvent] = []

    /// Files whose requested chunks are read and sent inside the chunk request
    /// callback, by toxcore slot: the file's reader. The actor sets it
    /// before each `tox_iterate` (`FriendFileTransfers.directChunkSources`);
    /// a slot leaves it for the rest of the iteration once a chunk could not
    /// go, so later chunks queue behind that one, in order.
    var chunkSources: [FileSlot: ReadAhead] = [:]

    /// Reads and sends the chunk toxcore asks for; false if it must wait for
    /// the actor (not a direct source, a short read, or toxcore's queue full).
    private func sendChunk(_ tox: OpaquePointer, _ slot: FileSlot, position: UInt64, length: Int) -> Bool {
        guard length > 0, let reader = chunkSources[slot] else { return false }
        let sent = ToxFileChunk.send(tox, slot, reader: reader, position: position, length: length) == .sent
        if sent {
            events.append(.fileChunkSent(slot, position: position, length: length))
        } else {
            chunkSources[slot] = nil
        }
        return sent
    }

    /// Files we receive whose chunks are written inside the receive callback,
    /// by toxcore slot. The actor sets it before each `tox_iterate`
    /// (`FriendFileTransfers.directChunkSinks`); a slot leaves it for the
    /// rest of the iteration once a write failed.
    var chunkSinks: [FileSlot: ChunkSink] = [:]

    /// Writes a received chunk to its file; false if the actor must take it
    /// (not a sink, the empty last one, or past the announced size).
    func writeChunk(_ slot: FileSlot, position: UInt64, data: UnsafePointer<UInt8>?, length: Int) -> Bool {
        guard length > 0, let data, let sink = chunkSinks[slot], position <= sink.size,
            UInt64(length) <= sink.size - position
        else { return false }
        let written = sink.file.write(UnsafeRawBufferPointer(start: data, count: length), at: position)
        let end = position + UInt64(length)
        if written, case .fileChunksWritten(slot, let last, true)? = events.last {
            events[events.count - 1] = .fileChunksWritten(slot, end: max(last, end), written: true)
        } else {
            events.append(.fileChunksWritten(slot, end: end, written: written))
        }
        if !written { chunkSinks[slot] = nil }
        return true
    }

    /// The `user_data` pointer for `tox_iterate`. The actor keeps the buffer alive.
    var pointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    func drain() -> [ToxEvent] {
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    static func install(on tox: OpaquePointer) {
        installFileCallbacks(on: tox)
        tox_callback_self_connection_status(tox) { _, status, user in
            ToxEventBuffer.append(user, .selfConnection(connected: status != TOX_CONNECTION_NONE))
        }
        tox_callback_friend_request(tox) { _, key, message, length, user in
            guard let key else { return }
            ToxEventBuffer.append(
                user,
                .friendRequest(publicKey: ToxEventBuffer.copy(key, 32), payload: ToxEventBuffer.copy(message, length)))
        }
        tox_callback_friend_lossless_packet(tox) { _, friend, data, length, user in
            guard let data, length > 1, data[0] == ToxEventBuffer.packetId else { return }
            ToxEventBuffer.append(user, .friendPacket(friend: friend, data: ToxEventBuffer.copy(data + 1, length - 1)))
        }
        tox_callback_friend_message(tox) { _, friend, type, data, length, user in
            // Carrier sends only NORMAL messages and ignores ACTION ones (wire notes §1.3).
            guard type == TOX_MESSAGE_TYPE_NORMAL, let data, length > 0 else { return }
            ToxEventBuffer.append(user, .friendMessage(friend: friend, data: ToxEventBuffer.copy(data, length)))
        }
        tox_callback_friend_read_receipt(tox) { _, friend, messageId, user in
            ToxEventBuffer.append(user, .friendReadReceipt(friend: friend, messageId: messageId))
        }
        tox_callback_friend_connection_status(tox) { _, friend, status, user in
            let link: FriendLink? =
                switch status {
                case TOX_CONNECTION_UDP: .udp
                case TOX_CONNECTION_TCP: .tcp
                default: nil
                }
            ToxEventBuffer.append(user, .friendConnection(friend: friend, link: link))
        }
        tox_callback_friend_status(tox) { _, friend, status, user in
            let presence: Presence =
                switch status {
                case TOX_USER_STATUS_AWAY: .away
                case TOX_USER_STATUS_BUSY: .busy
                default: .none
                }
            ToxEventBuffer.append(user, .friendStatus(friend: friend, presence))
        }
        tox_callback_friend_status_message(tox) { _, friend, message, length, user in
            ToxEventBuffer.append(user, .friendStatusMessage(friend: friend, ToxEventBuffer.copy(message, length)))
        }
        tox_callback_conference_invite(tox) { _, friend, type, cookie, length, user in
            guard type == TOX_CONFERENCE_TYPE_TEXT else { return }
            ToxEventBuffer.append(user, .conferenceInvite(friend: friend, cookie: ToxEventBuffer.copy(cookie, length)))
        }
        tox_callback_conference_connected(tox) { _, conference, user in
            ToxEventBuffer.append(user, .conferenceConnected(conference: conference))
        }
        tox_callback_conference_message(tox) { tox, conference, peer, _, message, length, user in
            // Peer numbers change as peers come and go: resolve the key now.
            var key = [UInt8](repeating: 0, count: 32)
            let known = tox_conference_peer_get_public_key(tox, conference, peer, &key, nil)
            ToxEventBuffer.append(
                user,
                .conferenceMessage(
                    conference: conference, peerKey: known ? key : nil, data: ToxEventBuffer.copy(message, length)))
        }
        tox_callback_conference_title(tox) { _, conference, _, title, length, user in
            ToxEventBuffer.append(
                user, .conferenceTitle(conference: conference, title: ToxEventBuffer.copy(title, length)))
        }
        tox_callback_conference_peer_list_changed(tox) { _, conference, user in
            ToxEventBuffer.append(user, .conferencePeerListChanged(conference: conference))
        }
    }

    private static func installFileCallbacks(on tox: OpaquePointer) {
        tox_callback_file_recv(tox) { tox, friend, file, kind, size, name, length, user in
            var fileId = [UInt8](repeating: 0, count: Int(TOX_FILE_ID_LENGTH))
            guard tox_file_get_file_id(tox, friend, file, &fileId, nil) else { return }
            ToxEventBuffer.append(
                user,
                .fileOffered(
                    FileSlot(friend: friend, file: file), kind: kind, size: size,
                    name: ToxEventBuffer.copy(name, min(length, Int(TOX_MAX_FILENAME_LENGTH))), fileId: fileId))
        }
        tox_callback_file_recv_control(tox) { _, friend, file, control, user in
            ToxEventBuffer.append(user, .fileControl(FileSlot(friend: friend, file: file), control))
        }
        tox_callback_file_chunk_request(tox) { tox, friend, file, position, length, user in
            guard let user else { return }
            let buffer = Unmanaged<ToxEventBuffer>.fromOpaque(user).takeUnretainedValue()
            let slot = FileSlot(friend: friend, file: file)
            if let tox, buffer.sendChunk(tox, slot, position: position, length: length) { return }
            buffer.events.append(.fileChunkRequest(slot, position: position, length: length))
        }
        tox_callback_file_recv_chunk(tox) { _, friend, file, position, data, length, user in
            guard let user else { return }
            let buffer = Unmanaged<ToxEventBuffer>.fromOpaque(user).takeUnretainedValue()
            let slot = FileSlot(friend: friend, file: file)
            if buffer.writeChunk(slot, position: position, data: data, length: length) { return }
            buffer.events.append(.fileChunk(slot, position: position, data: ToxEventBuffer.copy(data, length)))
        }
    }

    private static func append(_ user: UnsafeMutableRawPointer?, _ event: ToxEvent) {
        guard let user else { return }
        Unmanaged<ToxEventBuffer>.fromOpaque(user).takeUnretainedValue().events.append(event)
    }

    private static func copy(_ pointer: UnsafePointer<UInt8>?, _ length: Int) -> [UInt8] {
        guard let pointer, length > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: pointer, count: length))
    }
}
