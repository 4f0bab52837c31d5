import CToxcore
import CarrierWire
import Foundation

extension Carrier {
    /// A sent message awaiting its receipt: toxcore's read receipt for the
    /// piece that carries it (the last), sent by the friend's toxcore when
    /// it has the piece, as in Carrier (wire notes §2.3).
    struct PendingReceipt {
        var to: UserId
        /// Set once the last piece is with toxcore: no receipt by then is an error.
        var deadline: ContinuousClock.Instant?
        var sentAt: ContinuousClock.Instant
        /// Kept while Express is configured: a late receipt sends the message there.
        var payload: (ext: String?, data: [UInt8])?
        var fallingBack = false
    }

    /// Sends a message of 1 byte to 5 MB to `userId` or `userId:extension`.
    /// Returns at once; the receipt arrives as `.receipt(id, ...)`.
    /// A message to an offline friend is stored on Express (receipt `.offline`)
    /// when `options.expressNodes` is set, else refused with `.friendOffline`.
    @discardableResult
    public func sendMessage(_ data: [UInt8], to target: String) async throws(CarrierError) -> MessageId {
        let (friend, ext) = try parseTarget(target)
        let number = try friendNumber(friend)
        guard !data.isEmpty else { throw .invalidArgument("a message needs at least one byte") }
        guard data.count <= Self.maxMessageSize else {
            throw .tooLong("a message is at most \(Self.maxMessageSize) bytes, this one is \(data.count)")
        }
        try ensureAlive()
        let id = takeMessageId()
        guard friends[friend]?.connected == true else {
            guard !options.expressNodes.isEmpty else { throw .friendOffline(friend.description) }
            receipts[id] = PendingReceipt(to: friend, sentAt: clock.now)
            counters.messagesSent += 1
            finishReceipt(id, await depositOffline(data, extension: ext, to: friend))
            return id
        }
        var queue = outgoing[number] ?? OutgoingQueue()
        guard queue.hasRoom(for: data.count) else { throw .queueFull(friend.description) }
        let pieces: [CarrierFragmenter.Piece]
        do { pieces = try CarrierFragmenter.message(data, ext: ext, tid: Self.newTransferId()) } catch {
            throw .invalidArgument(error.description)
        }
        for piece in pieces { queue.append(.init(piece.packet, receipt: piece.carriesReceipt ? id : nil)) }
        outgoing[number] = queue
        receipts[id] = PendingReceipt(
            to: friend, sentAt: clock.now, payload: options.expressNodes.isEmpty ? nil : (ext, data))
        counters.messagesSent += 1
        flushOutgoing()
        noteActivity()
        return id
    }

    /// A transfer id for fragments: Carrier's `time + rand` gives ids that
    /// repeat across restarts; a random non-zero one does not (0 is "unset").
    static func newTransferId() -> Int64 { Int64.random(in: 1...Int64.max) }

    /// The lossy custom packet id of `acknowledgeMessages` (toxcore's range
    /// is 192-254; ToxAV's RTP takes 192 and 193).
    static let acknowledgementPacketId: UInt8 = 220

    /// Answers friends whose messages came in this iteration with one byte,
    /// at once. A message's receipt is toxcore's read receipt, which the
    /// sender's toxcore gives once the receiver's net_crypto acknowledged the
    /// packet; that acknowledgement rides in the header of the receiver's next
    /// packet, and with nothing else to send, net_crypto's own request packet
    /// comes up to a second later (the demo's message took 1.08 s then, 60-120
    /// ms otherwise). A lossy packet goes now and carries it. A Carrier peer's
    /// toxcore reads the acknowledgement and drops the packet (no handler).
    func acknowledgeMessages() {
        guard !acknowledgementsDue.isEmpty else { return }
        let packet = [Self.acknowledgementPacketId]
        for number in acknowledgementsDue { _ = tox_friend_send_lossy_packet(tox, number, packet, packet.count, nil) }
        acknowledgementsDue.removeAll(keepingCapacity: true)
    }

    /// toxcore's receipt for a friend message: if it carried a message's
    /// receipt, the message is delivered.
    func handleReadReceipt(friend number: UInt32, toxMessageId: UInt32) {
        guard let id = toxReceipts[number]?.removeValue(forKey: toxMessageId) else { return }
        finishReceipt(id, .delivered)
    }

    /// The next message id (1 to UInt32.max, then around again).
    func takeMessageId() -> MessageId {
        defer { nextMessageId = nextMessageId == .max ? 1 : nextMessageId + 1 }
        return nextMessageId
    }

    /// Sends a message and waits for its receipt.
    public func deliverMessage(_ data: [UInt8], to target: String) async throws(CarrierError) -> ReceiptState {
        let id = try await sendMessage(data, to: target)
        if receipts[id] == nil, let state = finishedReceipts[id] { return state }
        return await withCheckedContinuation { continuation in
            if receipts[id] == nil {
                continuation.resume(returning: finishedReceipts[id] ?? .error("receipt lost"))
            } else {
                receiptWaiters[id] = continuation
            }
        }
    }

    func finishReceipt(_ id: MessageId, _ state: ReceiptState) {
        guard let pending = receipts.removeValue(forKey: id) else { return }
        rememberFinished(id, state)
        emit(.receipt(id, to: pending.to, state: state))
        receiptWaiters.removeValue(forKey: id)?.resume(returning: state)
    }

    /// Hands a received message to the application; returns why it was refused, if it was.
    func deliverMessage(
        from friend: UserId, ext: String?, data: [UInt8], timestamp: Date = Date(), offline: Bool = false
    ) -> String? {
        let event = CarrierEvent.message(
            from: friend, extension: ext, data: data, timestamp: timestamp, offline: offline)
        guard let ext else {
            counters.messagesReceived += 1
            emit(event)
            return nil
        }
        guard let extensionHub = extensionHubs[ext] else {
            counters.unknownExtension += 1
            drop(from: friend, "message for unregistered extension \(ext)")
            return "no extension \(ext)"
        }
        counters.messagesReceived += 1
        extensionHub.send(event)
        return nil
    }

    func expireReceipts(now: ContinuousClock.Instant) {
        for (id, pending) in receipts {
            if let deadline = pending.deadline, now > deadline {
                finishReceipt(id, .error("no receipt within \(options.receiptTimeout)"))
            }
        }
    }

    /// The last outcomes, so `deliverMessage` can read one that finished before it waited.
    private func rememberFinished(_ id: MessageId, _ state: ReceiptState) {
        finishedReceipts[id] = state
        finishedOrder.append(id)
        if finishedOrder.count > 256 { finishedReceipts[finishedOrder.removeFirst()] = nil }
    }
}
