import Foundation

extension Carrier {
    /// A sent message awaiting the friend's receipt packet, which its node
    /// sends once the whole message reached its application (or was refused).
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
        if data.count <= WirePacket.fragmentDataSize {
            queue.append(.init(.message(ext: ext, data: data, messageId: id), receipt: id))
        } else {
            let transferId = UInt64.random(in: 1...UInt64.max)
            let pieces = WirePacket.Fragment.split(data, ext: ext, transferId: transferId, messageId: id)
            for (index, piece) in pieces.enumerated() {
                queue.append(.init(.bulk(piece), receipt: index == pieces.count - 1 ? id : nil))
            }
        }
        outgoing[number] = queue
        receipts[id] = PendingReceipt(
            to: friend, sentAt: clock.now, payload: options.expressNodes.isEmpty ? nil : (ext, data))
        counters.messagesSent += 1
        flushOutgoing()
        noteActivity()
        return id
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

    /// Tells the sender its message arrived (or why not), if it asked.
    func sendReceipt(_ messageId: UInt32?, to friend: UserId, refusal: String?) {
        guard let messageId, let number = friends[friend]?.number else { return }
        let packet = WirePacket.receipt(
            messageId: messageId, status: refusal == nil ? 0 : 1,
            reason: refusal.map { String($0.utf8.prefix(WirePacket.maxReasonLength)) ?? "refused" })
        do { try enqueue([packet], to: number, friend: friend) } catch {
            Self.log.warning("the receipt for message \(messageId) to \(friend) did not go out: \(error)")
        }
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
