import AsyncExtras
import CToxcore
import CarrierLog
import CarrierWire
import Foundation

/// A peer-to-peer node on toxcore: identity, friends, messages with receipts,
/// invites, extensions and groups.
///
/// Threading: the actor owns the `Tox` instance and is the only caller of
/// toxcore. It runs on a thread of its own (`NodeThread`, its executor), whose
/// loop runs `tox_iterate`; toxcore's callbacks fire synchronously there and
/// are turned into `CarrierEvent`s. Events reach
/// subscribers through `AsyncStream`s. Call `start()` to go online and
/// `stop()` before dropping the node: the loop keeps the actor alive until then.
public actor Carrier {
    /// Our user id (the identity's public key), what friends know us by.
    public nonisolated let userId: UserId
    /// The options the node was made with.
    public nonisolated let options: CarrierOptions
    /// The node's own thread (`NodeThread`): toxcore's loop waits there on its
    /// socket, and every call into the node runs there, in order.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }

    /// toxcore; replaced when the node starts it afresh (`restartTox`).
    var tox: OpaquePointer
    let buffer = ToxEventBuffer()
    /// The actor's executor and the loop's wait (on toxcore's socket or the next interval).
    nonisolated let thread = NodeThread(name: "carrier-node")
    let clock = ContinuousClock()
    let store: NodeStore?
    /// The data directory's lock, held until `stop()`.
    let lockFd: Int32?

    var loopTask: Task<Void, Never>?
    /// toxcore's UDP socket, whose datagrams end the loop's sleep (see
    /// `SocketWatch`): the one the thread watches, set with `thread.watch`.
    var socketWatch: SocketWatch? { thread.socket }
    var running = false
    var killed = false
    /// `stop` is under way (it awaits the loop and the deposits), and when it is done.
    private var stopping = false
    private let stopped = AsyncLatch()
    /// The identity as it was when the node stopped (`stop`), for the accessors after.
    var lastKnown = LastKnown()
    struct LastKnown {
        var address: CarrierAddress?
        var secretKey: [UInt8] = []
        var info = UserInfo()
        var presence = Presence.none
    }
    var connected = false
    /// What toxcore last said of its own connection; `connected` also weighs `isolation`.
    var toxConnected = false
    var isolation: IsolationCheck
    /// When `updateConnection` last looked at the TCP relay connections.
    var isolationTcpCheck = ContinuousClock.now
    var isReady = false
    /// When to ask the bootstrap nodes again, or start toxcore afresh, while off the network.
    var recovery: OfflineRecovery
    /// Off-network stretches so far, for `reachability()`.
    var offline = OfflineRecord()
    var dirty = false
    var lastActivity: ContinuousClock.Instant

    var friends: [UserId: FriendState] = [:]
    var friendIds: [UInt32: UserId] = [:]
    var labels: [UserId: String] = [:]
    var awaitingAcceptance: Set<UserId> = []
    /// When to start toxcore's link to a friend someone waits for afresh.
    var linkRefresh = FriendLinkRefresh()
    /// Hints and the start of files on new links (loopback-only nodes).
    var newLinks = NewLinkWarmUp()
    /// Friends taken out of toxcore that it has not taken back yet (`readdFriend`).
    var friendsToReadd: Set<UserId> = []
    var counters = NodeStats()

    var hub = EventHub<CarrierEvent>()
    var extensionHubs: [String: EventHub<CarrierEvent>] = [:]
    var waiters: [UInt64: StateWaiter] = [:]
    var nextWaiterId: UInt64 = 0

    // Messages (Carrier+Messages.swift)
    var outgoing: [UInt32: OutgoingQueue] = [:]
    var nextMessageId: MessageId = 1
    var receipts: [MessageId: PendingReceipt] = [:]
    var receiptWaiters: [MessageId: CheckedContinuation<ReceiptState, Never>] = [:]
    var finishedReceipts: [MessageId: ReceiptState] = [:]
    var finishedOrder: [MessageId] = []
    /// Our message ids by friend and toxcore's message id of the piece that
    /// carries the receipt (toxcore's read receipt is Carrier's receipt).
    var toxReceipts: [UInt32: [UInt32: MessageId]] = [:]
    /// Friends whose friend messages came in this iteration (`acknowledgeMessages`).
    var acknowledgementsDue: Set<UInt32> = []
    /// Bulk messages, invites and replies coming in, in pieces.
    var reassembler: CarrierReassembler<UserId>

    // Invites (Carrier+Invites.swift)
    var pendingInvites: [InviteKey: PendingInvite] = [:]
    var incomingInvites: [InviteKey: ContinuousClock.Instant] = [:]
    var repliedInvites: [InviteKey: RepliedInvite] = [:]
    /// Tests: invites and replies to drop once, by content (`loseNextInvite`).
    var lostInvitesForTests: Set<[UInt8]> = []

    /// Files between friends (driven in Carrier+Files.swift).
    var files: FriendFileTransfers

    // Express (Carrier+Express.swift)
    var offlineInbox: OfflineInbox
    var pulling = false
    var pullAgain = false
    /// The contact list each Express node has from us (a hash of the body sent), by node.
    var registeredContacts: [String: [UInt8]] = [:]
    var nextPull: ContinuousClock.Instant?
    var turnCache: (info: TurnServerInfo, fetched: Int64)?
    /// Until when (Unix s) not to ask Express for TURN again: it has none.
    var noTurnUntil: Int64?
    var deposits: [Task<Void, Never>] = []
    /// Tests: the nonce of Carrier TURN credentials, so that a stock coturn can hold them as a static user.
    var carrierTurnNonceForTests: [UInt8]?
    var carrierTurnPortForTests: UInt16?

    struct FriendState {
        var number: UInt32
        var link: FriendLink?
        var connected: Bool { link != nil }
        var presence = Presence.none
        var info = UserInfo()
        /// What it said it speaks beyond Carrier (`ExtraPacket.hello`) on
        /// this link; empty for a Carrier peer, and until it says.
        var extras: ExtraPacket.Features = []
        /// When its link came up (nil while offline).
        var linkUpAt: ContinuousClock.Instant?
    }

    struct StateWaiter {
        var condition: WaitCondition
        var continuation: CheckedContinuation<Bool, Never>
    }

    /// What a caller can wait for; checked after every loop iteration.
    enum WaitCondition {
        case ready
        case friendConnected(UserId)
        case friendLink(UserId, FriendLink)
        /// The friend said hello on its link, or the link is down.
        case friendHelloOrGone(UserId)
    }

    func holds(_ condition: WaitCondition) -> Bool {
        switch condition {
        case .ready: isReady
        case .friendConnected(let id): friends[id]?.connected == true
        case .friendLink(let id, let link): friends[id]?.link == link
        case .friendHelloOrGone(let id): friends[id]?.extras.isEmpty == false || friends[id]?.linkUpAt == nil
        }
    }

    /// The extension that carries call signaling (`RtcSignal` JSON invites), as in Carrier.
    public static let signalingExtension = "carrier"

    /// Largest message payload (the reference SDK's limit).
    public static let maxMessageSize = 5 * 1024 * 1024
    /// Largest invite or invite reply payload.
    public static let maxInviteSize = 8192

    /// Creates the node and its identity (loaded from the data directory, or
    /// new, or imported from `options.secretKey`) without going online.
    public init(options: CarrierOptions) throws(CarrierError) {
        // Checked before the lock is taken and toxcore made: a throw after them would leak both.
        if let secretKey = options.secretKey, secretKey.count != 32 {
            throw .invalidArgument("a secret key is 32 bytes, got \(secretKey.count)")
        }
        OpenSSLLifetime.keepThroughExit()
        self.options = options
        files = FriendFileTransfers(
            verdictTimeout: Self.fileVerdictTimeout, progressInterval: Self.fileProgressInterval,
            maxTransfers: Self.maxFileTransfers, maxIncomingSize: options.maxIncomingFileSize,
            offerTimeout: options.fileOfferTimeout, maxTransfersPerFriend: options.maxIncomingFilesPerFriend,
            stallTimeout: options.fileStallTimeout)
        store = options.dataDirectory.map(NodeStore.init(directory:))
        lockFd = try store?.lock()
        let saved: NodeStore.Contents?
        do {
            saved = try store?.load()
            tox = try Self.makeTox(options: options, saved: saved)
        } catch {
            if let lockFd { NodeStore.unlock(lockFd) }
            throw error
        }
        var key = [UInt8](repeating: 0, count: 32)
        tox_self_get_public_key(tox, &key)
        guard let id = UserId(publicKey: key) else { throw .tox(function: "tox_self_get_public_key", code: -1) }
        userId = id
        lastActivity = clock.now
        recovery = OfflineRecovery(startedAt: clock.now, restarts: options.restartsWhenOffline)
        linkRefresh = FriendLinkRefresh(after: options.friendLinkRefreshAfter)
        isolation = IsolationCheck(silence: options.aloneAfter)
        reassembler = CarrierReassembler(timeout: options.fragmentTimeout)
        offlineInbox = OfflineInbox(dataDirectory: options.dataDirectory)
        ToxEventBuffer.install(on: tox)
        var labels: [UserId: String] = [:]
        for (text, label) in saved?.extra.labels ?? [:] {
            if let id = UserId(text) { labels[id] = label }
        }
        self.labels = labels
        awaitingAcceptance = Set((saved?.extra.awaitingAcceptance ?? []).compactMap(UserId.init))
        for (id, state) in Self.readFriends(tox: tox) {
            friends[id] = state
            friendIds[state.number] = id
        }
        // A Carrier app's labels name friends by their number in its toxcore,
        // which loads friends from the save in order, as this one did.
        for label in options.carrierData?.labels ?? [] {
            if let id = friendIds[label.friendNumber] { self.labels[id] = label.text }
        }
        if saved == nil || options.secretKey != nil, let store {
            try Self.save(tox: tox, to: store, labels: self.labels, awaitingAcceptance: awaitingAcceptance)
        }
    }

    // MARK: Lifecycle

    /// Bootstraps and starts the iteration loop. Returns at once; wait for
    /// `.ready` (or `waitUntilReady`) before expecting friends to connect.
    public func start() throws(CarrierError) {
        guard !killed else { throw .notRunning }
        guard !running else { return }
        for node in options.bootstrapNodes { bootstrap(node) }
        recovery = OfflineRecovery(startedAt: clock.now, restarts: options.restartsWhenOffline)
        linkRefresh = FriendLinkRefresh(after: options.friendLinkRefreshAfter)
        offline = OfflineRecord(since: clock.now)
        thread.watch(udpPort().flatMap { SocketWatch(udpPort: $0) })
        running = true
        loopTask = Task { await self.runLoop() }
    }

    deinit { thread.finish() }

    /// Stops the loop, saves the state, fails whatever is pending and frees toxcore.
    /// A second call (from another task while the first awaits) waits for the first.
    public func stop() async {
        guard !killed else { return }
        if stopping {
            await stopped.wait()
            return
        }
        stopping = true
        defer { stopped.open() }
        running = false
        thread.wake()
        await loopTask?.value
        thread.watch(nil)  // before toxcore closes the socket
        for deposit in deposits { await deposit.value }
        deposits = []
        loopTask = nil
        if dirty { persistOrLog() }
        failEverythingPending(reason: "the node stopped")
        closeAllFiles(reason: "the node stopped")
        // What the identity accessors answer from now on. Nothing may call
        // toxcore after this: a Task of ours that was awaiting (an Express pull,
        // a file digest) comes back to a node whose toxcore is freed; every path
        // into toxcore checks `killed` (ensureAlive) first.
        lastKnown = LastKnown(
            address: address(), secretKey: exportSecretKey(), info: selfInfo, presence: presence())
        killed = true
        tox_kill(tox)
        if let lockFd { NodeStore.unlock(lockFd) }
        hub.finish()
        for var extensionHub in extensionHubs.values { extensionHub.finish() }
        extensionHubs = [:]
        for waiter in waiters.values { waiter.continuation.resume(returning: false) }
        waiters = [:]
    }

    /// Adds a bootstrap node (also as a TCP relay) while running.
    public func bootstrap(_ node: BootstrapNode) {
        guard !killed else { return }
        node.publicKey.withUnsafeBufferPointer { key in
            _ = tox_bootstrap(tox, node.host, node.port, key.baseAddress, nil)
            _ = tox_add_tcp_relay(tox, node.host, node.port, key.baseAddress, nil)
        }
    }

    private func runLoop() async {
        while running {
            iterate()
            let toxInterval = Duration.milliseconds(Int(tox_iteration_interval(tox)))
            let busy = isBusy || clock.now - lastActivity < .seconds(2)
            // While files move, at most toxcore's own interval (1 ms at speed),
            // as a plain toxcore client runs its loop.
            let interval =
                hasFileTraffic
                ? min(options.busyInterval, toxInterval)
                : busy ? options.busyInterval : min(options.idleInterval, toxInterval)
            await thread.sleep(for: interval)
        }
    }

    func iterate() {
        buffer.chunkSources = hasFileTraffic ? files.directChunkSources : [:]
        buffer.chunkSinks = hasFileTraffic ? files.directChunkSinks : [:]
        tox_iterate(tox, buffer.pointer)
        thread.rearm()
        for event in buffer.drain() { handle(event) }
        acknowledgeMessages()
        updateConnection()
        switch recovery.due(now: clock.now) {
        case .rebootstrap? where !options.bootstrapNodes.isEmpty:
            counters.rebootstraps += 1
            Self.log.info(
                "off the network for \(offline.currentSeconds(now: clock.now)) s: asking the bootstrap node(s) again: "
                    + options.bootstrapNodes.map { "\($0.host):\($0.port)" }.joined(separator: ", "))
            for node in options.bootstrapNodes { bootstrap(node) }
        case .restart?:
            restartTox(reason: "off the network for \(offline.currentSeconds(now: clock.now)) s")
        default:
            break
        }
        refreshAwaitedFriendLinks()
        flushOutgoing()
        flushFileChunks()
        expire(now: clock.now)
        pullIfDue(now: clock.now)
        if dirty { persistOrLog() }
        checkWaiters()
    }

    private var isBusy: Bool {
        !outgoing.isEmpty || !receipts.isEmpty || reassembler.openTransfers > 0 || hasFileTraffic
    }

    /// Wakes the loop so queued work goes out now rather than after the idle sleep.
    func noteActivity() {
        lastActivity = clock.now
        thread.wake()
    }

    func ensureAlive() throws(CarrierError) {
        if killed { throw .notRunning }
    }

    // MARK: Events

    /// A stream of every event from now on (except those for registered extensions).
    public func events() -> AsyncStream<CarrierEvent> {
        hub.subscribe { [weak self] id in Task { await self?.unsubscribe(id) } }
    }

    private func unsubscribe(_ id: UInt64) { hub.remove(id) }

    func emit(_ event: CarrierEvent) { hub.send(event) }

    func drop(from: UserId?, _ reason: String) {
        Self.log.info("dropped from \(from?.description ?? "unknown"): \(reason)")
        emit(.dropped(from: from, reason: reason))
    }

    static let log = Logger("node")

    /// Saves the state, saying so when it cannot (a full disk, a removed directory).
    func persistOrLog() {
        do { try persist() } catch { Self.log.error("cannot save the node's state: \(error)") }
    }

    /// Waits until `condition` holds, re-checked after every loop iteration.
    func wait(timeout: Duration, until condition: WaitCondition) async -> Bool {
        if holds(condition) { return true }
        if killed { return false }
        nextWaiterId += 1
        let id = nextWaiterId
        return await withCheckedContinuation { continuation in
            waiters[id] = StateWaiter(condition: condition, continuation: continuation)
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                await self?.resumeWaiter(id, with: false)
            }
        }
    }

    private func resumeWaiter(_ id: UInt64, with value: Bool) {
        waiters.removeValue(forKey: id)?.continuation.resume(returning: value)
    }

    /// Friends someone waits for that have not come online: their link
    /// starts afresh when `FriendLinkRefresh` says so.
    private func refreshAwaitedFriendLinks() {
        for id in friendsToReadd { readdFriend(id) }
        var awaited: Set<UserId> = []
        for waiter in waiters.values {
            switch waiter.condition {
            case .friendConnected(let id), .friendLink(let id, _):
                if friends[id]?.connected == false { awaited.insert(id) }
            case .ready, .friendHelloOrGone:  // a hello is waited for on a link that is up
                break
            }
        }
        for due in linkRefresh.due(awaited: awaited, online: connected, now: clock.now) {
            restartFriendLink(due)
        }
    }

    private func checkWaiters() {
        for (id, waiter) in waiters where holds(waiter.condition) { resumeWaiter(id, with: true) }
    }

    /// Waits until the node is connected to the network.
    public func waitUntilReady(timeout: Duration) async -> Bool {
        await wait(timeout: timeout, until: .ready)
    }

    /// Whether the node has joined the network since it started (it stays
    /// true: see `online` for now).
    public var ready: Bool { isReady }

    /// Whether the node is on the network now, as toxcore last said (a
    /// node that lost it says so here, in a `.connection` event and in its log).
    public var online: Bool { connected }

    /// Counters of what the node dropped, sent and did.
    public func stats() -> NodeStats { counters }

    /// How the node has stood on the network since it started.
    public func reachability() -> Reachability {
        offline.report(
            now: clock.now, online: connected, rebootstraps: counters.rebootstraps, restarts: counters.restarts)
    }

    // MARK: Persistence

    func persist() throws(CarrierError) {
        guard friendsToReadd.isEmpty else { return }  // saved once toxcore has every friend back
        dirty = false
        guard let store, !killed else { return }
        try Self.save(tox: tox, to: store, labels: labels, awaitingAcceptance: awaitingAcceptance)
    }

    static func save(
        tox: OpaquePointer, to store: NodeStore, labels: [UserId: String], awaitingAcceptance: Set<UserId>
    ) throws(CarrierError) {
        var savedata = [UInt8](repeating: 0, count: tox_get_savedata_size(tox))
        tox_get_savedata(tox, &savedata)
        let extra = NodeStore.Extra(
            labels: Dictionary(uniqueKeysWithValues: labels.map { ($0.key.description, $0.value) }),
            awaitingAcceptance: awaitingAcceptance.map(\.description).sorted())
        try store.save(.init(toxSavedata: savedata, extra: extra))
    }
}
