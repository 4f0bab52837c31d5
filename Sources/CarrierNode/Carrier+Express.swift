import CarrierWire
import Foundation

/// Offline delivery through Express nodes (`CarrierOptions.expressNodes`,
/// protocol in `ExpressProtocol`, docs/express.md).
///
/// Out: a message to a friend who is offline, or whose receipt has not come
/// within `offlineFallbackAfter`, is sealed to the friend and stored on the
/// first Express node that takes it; its receipt is `.offline`. A friend
/// request also goes to Express, for a recipient that is offline.
/// In: on start, when a friend connects and every `expressPullInterval`,
/// the node pulls its records from each Express node, keeps them in the
/// `OfflineInbox` (on disk), deletes them on the node, then hands them to the
/// application in order (`.message(…, offline: true)` with the sender's time).
extension Carrier {
    /// Test hook: stop a pull after its records are kept locally, before they
    /// are deleted on Express and delivered (what a crash there would leave).
    nonisolated(unsafe) static var stopPullAfterKeepingForTests = false

    /// The client for the Express nodes that speak our API, if any.
    var expressClient: ExpressClient? {
        let ours = options.expressNodes.filter { $0.api == .ours }
        return ours.isEmpty ? nil : ExpressClient(nodes: ours, userId: userId, secretKey: exportSecretKey())
    }

    /// A client for each Express node that speaks Carrier's API.
    var carrierExpressClients: [CarrierExpressClient] {
        options.expressNodes.filter { $0.api == .carrier }.map {
            CarrierExpressClient(node: $0, userId: userId, secretKey: exportSecretKey())
        }
    }

    /// Seals `data` for `friend` and stores it on Express (our nodes first,
    /// then Carrier's, each in order); the receipt's state.
    func depositOffline(_ data: [UInt8], extension ext: String?, to friend: UserId) async -> ReceiptState {
        var failure = "no Express node is configured"
        if let client = expressClient {
            let state = await depositOffline(data, extension: ext, to: friend, with: client)
            guard case .error(let why) = state else { return state }
            failure = why
        }
        // Carrier's way: the whole message as one friendmsg packet.
        let packet = CarrierPacket.message(ext: ext, data: data).encode()
        for client in carrierExpressClients {
            do {
                try await client.depositMessage(packet, to: friend)
                return .offline
            } catch {
                failure = "the friend is offline and Express did not store the message: \(error)"
            }
        }
        return .error(failure)
    }

    private func depositOffline(_ data: [UInt8], extension ext: String?, to friend: UserId, with client: ExpressClient)
        async -> ReceiptState
    {
        let id = (0..<SealedMessage.idSize).map { _ in UInt8.random(in: 0...255) }
        let message = SealedMessage(
            kind: .message, id: id, timestamp: UInt64(Date().timeIntervalSince1970 * 1000), ext: ext, data: data)
        guard let sealed = message.seal(to: friend, senderSecretKey: client.secretKey) else {
            return .error("cannot seal the message")
        }
        do {
            try await client.deposit(sealed, to: friend, id: id)
            return .offline
        } catch {
            return .error("the friend is offline and Express did not store the message: \(error)")
        }
    }

    /// Also leaves a friend request on Express, for a recipient who is offline now.
    func depositFriendRequest(_ payload: [UInt8], to address: CarrierAddress) {
        for client in carrierExpressClients {
            deposits.append(
                Task {
                    do { try await client.depositRequest(payload, to: address) } catch {
                        Self.log.warning(
                            "the friend request to \(address.userId) was not left on \(client.node): \(error)")
                    }
                })
        }
        guard let client = expressClient else { return }
        let id = (0..<SealedMessage.idSize).map { _ in UInt8.random(in: 0...255) }
        let request = SealedMessage(
            kind: .friendRequest, id: id, timestamp: UInt64(Date().timeIntervalSince1970 * 1000), ext: nil,
            data: payload, nospam: address.nospam)
        guard let sealed = request.seal(to: address.userId, senderSecretKey: client.secretKey) else { return }
        // `stop()` waits for it (bounded by the HTTP timeout), so a node that stops right away still leaves it.
        deposits.append(
            Task {
                do { try await client.depositRequest(sealed, to: address.userId, id: id) } catch {
                    Self.log.warning("the friend request to \(address.userId) was not left on Express: \(error)")
                }
            })
    }

    /// Messages whose receipt is late go to Express (once); their receipt is then `.offline`.
    func fallBackToExpress(now: ContinuousClock.Instant) {
        guard !options.expressNodes.isEmpty else { return }
        for (id, pending) in receipts where !pending.fallingBack && now - pending.sentAt > options.offlineFallbackAfter
        {
            guard let payload = pending.payload else { continue }
            receipts[id]?.fallingBack = true
            Task {
                let state = await self.depositOffline(payload.data, extension: payload.ext, to: pending.to)
                // Only an Express receipt replaces the wait; a failure leaves the direct path its deadline.
                if state == .offline { self.finishReceipt(id, .offline) }
            }
        }
    }

    /// For tests: records a message to `friend` as sent `ago` without a receipt
    /// (as a friend that stopped answering would leave it); returns its id.
    func pretendSentWithoutReceipt(_ data: [UInt8], to friend: UserId, ago: Duration) -> MessageId {
        let id = takeMessageId()
        receipts[id] = PendingReceipt(to: friend, sentAt: clock.now - ago, payload: (nil, data))
        noteActivity()
        return id
    }

    // MARK: Pulling

    /// Pulls now unless a pull is running (then once more after it).
    func requestPull() {
        guard !options.expressNodes.isEmpty, !killed else { return }
        if pulling {
            pullAgain = true
            return
        }
        pulling = true
        nextPull = clock.now + options.expressPullInterval
        Task { await self.pullEveryNode() }
    }

    func pullIfDue(now: ContinuousClock.Instant) {
        guard isReady, let due = nextPull, now >= due else { return }
        requestPull()
    }

    private func pullEveryNode() async {
        for client in carrierExpressClients {
            guard !killed else { return }
            await pullCarrier(client)
        }
        guard let client = expressClient else { return finishPull() }
        for node in client.nodes {
            // Stopped between nodes: no new request (the process may be exiting).
            guard !killed else { return }
            await registerContacts(with: client, on: node)
            var after: UInt64 = 0
            // Bounded: at most 100 batches per node in one pull.
            for _ in 0..<100 {
                let batch: (records: [ExpressProtocol.Record], more: Bool)
                do { batch = try await client.pull(after: after, from: node) } catch {
                    guard !killed else { return }
                    Self.log.warning("pulling offline messages from \(node.host):\(node.port) failed: \(error)")
                    break
                }
                // The node may have stopped while the request was out: toxcore is gone then.
                guard !killed else { return }
                let (records, more) = batch
                guard let last = records.last?.seq else { break }
                keepOffline(records)
                if Self.stopPullAfterKeepingForTests { return }
                do { try await client.delete(through: last, on: node) } catch {
                    // Kept here and known by id: pulled again, they are not delivered twice.
                    Self.log.warning("deleting pulled messages on \(node.host):\(node.port) failed: \(error)")
                }
                guard !killed else { return }
                after = last
                if !more { break }
            }
        }
        finishPull()
    }

    private func finishPull() {
        deliverOfflineInbox()
        pulling = false
        if pullAgain {
            pullAgain = false
            requestPull()
        }
    }

    /// Tells each Express node who may leave us messages, if that changed
    /// (a friend added or removed); the next pull tries again after a failure.
    func refreshContacts() {
        guard let client = expressClient, !killed else { return }
        Task {
            for node in client.nodes { await self.registerContacts(with: client, on: node) }
        }
    }

    /// Registers our friends' hashes on `node` unless it has this very list already.
    private func registerContacts(with client: ExpressClient, on node: ExpressNode) async {
        let body = ExpressContact.registration(
            secretKey: client.secretKey, friends: Array(friends.keys), serverKey: node.publicKey)
        let digest = ExpressProtocol.sha256(body)
        guard registeredContacts[node.description] != digest else { return }
        do {
            try await client.registerContacts(body, on: node)
            registeredContacts[node.description] = digest
        } catch {
            guard !killed else { return }
            Self.log.warning("registering contacts on \(node.host):\(node.port) failed: \(error)")
        }
    }

    /// Opens each record and keeps what is for us and new; drops the rest, counted.
    private func keepOffline(_ records: [ExpressProtocol.Record]) {
        let secretKey = exportSecretKey()
        for record in records {
            guard let message = SealedMessage.open(record.sealed, from: record.sender, recipientSecretKey: secretKey)
            else {
                counters.malformedPackets += 1
                drop(from: record.sender, "an offline message that does not open (not sealed by its sender for us)")
                continue
            }
            do {
                _ = try offlineInbox.add(sender: record.sender, sealed: record.sealed, id: message.id)
            } catch {
                // Not kept: it stays on Express and comes again with the next pull.
                drop(from: record.sender, "cannot keep an offline message: \(error)")
            }
        }
    }

    /// Hands kept messages to the application in order, each once.
    func deliverOfflineInbox() {
        guard !killed else { return }
        let secretKey = exportSecretKey()
        for entry in offlineInbox.entries {
            defer { offlineInbox.remove(entry) }
            guard let message = SealedMessage.open(entry.sealed, from: entry.sender, recipientSecretKey: secretKey)
            else { continue }
            let sentAt = Date(timeIntervalSince1970: Double(message.timestamp) / 1000)
            switch message.kind {
            case .message:
                guard friends[entry.sender] != nil else {
                    drop(from: entry.sender, "an offline message from someone who is not a friend")
                    continue
                }
                _ = deliverMessage(
                    from: entry.sender, ext: message.ext, data: message.data, timestamp: sentAt, offline: true)
            case .friendRequest:
                guard friends[entry.sender] == nil, message.nospam == nospam(),
                    message.data.count <= CarrierLimits.maxFriendRequestPayload,
                    case .friendRequest(let request)? = try? CarrierPacket.decode(message.data)
                else { continue }
                emit(
                    .friendRequest(
                        from: entry.sender, name: request.name, description: request.description,
                        hello: Self.withoutTrailingNuls(request.hello ?? "")))
            }
        }
    }

    /// TURN credentials from the first Express node that issues them; kept
    /// and reused until a quarter of their lifetime is left.
    /// An Express node that issues no TURN credentials (it answered 404) is
    /// not asked again for 10 minutes: `.unavailable`, at once.
    public func turnServerInfo() async throws(CarrierError) -> TurnServerInfo {
        let now = Int64(Date().timeIntervalSince1970)
        if let cached = turnCache, cached.fetched + (cached.info.expires - cached.fetched) * 3 / 4 > now {
            return cached.info
        }
        if let noTurnUntil, now < noTurnUntil { throw .unavailable(Self.noTurn) }
        guard let client = expressClient else {
            guard options.expressNodes.isEmpty else {
                throw .unavailable("Carrier's Express nodes issue no TURN credentials (the bootstrap nodes do)")
            }
            throw .invalidArgument(
                "no Express node is configured (--express HOST:PORT:KEY) to ask for TURN credentials")
        }
        do {
            let info = try await client.turnServer()
            turnCache = (info, now)
            return info
        } catch  where error.status == 404 {
            noTurnUntil = now + 600
            throw .unavailable(Self.noTurn)
        } catch {
            throw .timedOut("no TURN credentials from Express: \(error)")
        }
    }

    static let noTurn = "the Express node issues no TURN credentials (carrier express --turn-secret … --turn-url …)"

    /// Whether the node knows Express nodes (offline delivery, TURN).
    public var hasExpress: Bool { !options.expressNodes.isEmpty }
}
