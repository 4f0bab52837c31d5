import AsyncExtras
import CarrierLog
import CarrierNode
import CarrierSessions
import FileSafety
import Foundation
import RtcFileTransfer
import RtcPeer

#if canImport(Glibc)
    import Glibc
#endif

/// Files between friends on the fastest path that works: a direct WebRTC
/// session (`carrier-friend-file/1` on a data channel, docs/file-protocol.md)
/// when the friend is online and its node speaks it, toxcore's file transfer
/// (`Carrier.sendFile`) otherwise.
///
/// The API and the events are `Carrier`'s (offer, accept or refuse, progress,
/// pause, resume, cancel, one `.finished`), each event tagged with its path.
/// A sender falls back to toxcore when no session connects within
/// `connectTimeout`, when the friend's node closes the file channel unanswered
/// (an older node), or when the session breaks part-way: the receiver's
/// partial file is the same on both paths, so toxcore resumes from it.
public actor FriendFiles {
    /// How the direct path is tried.
    public struct Configuration: Sendable {
        /// Try a session first (off: toxcore only, as a node without sessions).
        public var direct: Bool
        /// How long a session may take to connect before the file goes over toxcore.
        public var connectTimeout: Duration
        /// The largest file taken over the direct path (nil: the node's `maxIncomingFileSize`).
        public var maxIncomingSize: UInt64?
        /// Progress events come at most this often per transfer (toxcore's path: every 200 ms).
        public var progressInterval: Duration = .milliseconds(200)
        /// While toxcore carries a file out, a session is tried again this
        /// often; one that connects carries the transfer on from the
        /// receiver's partial file (nil: toxcore keeps what it took).
        public var handOverInterval: Duration? = .seconds(30)
        /// No hand-over for less than this left: toxcore finishes it sooner than a session comes up.
        public var handOverMinimum: UInt64 = 8 << 20
        /// A file coming over a session with nothing arriving for this long
        /// ends, its bytes kept for a resume (nil: the node's `fileStallTimeout`).
        public var stallTimeout: Duration?
        /// Where files that come as Beagle file messages (from Carrier apps)
        /// are saved, under a safe form of their name; nil: not saved (the
        /// message is still an event of the node's).
        public var messageFilesDirectory: String?

        /// The defaults: direct first, 10 s to connect, the node's size limit.
        public init(direct: Bool = true, connectTimeout: Duration = .seconds(10), maxIncomingSize: UInt64? = nil) {
            self.direct = direct
            self.connectTimeout = connectTimeout
            self.maxIncomingSize = maxIncomingSize
        }
    }

    static let log = Logger("files")

    let node: Carrier
    let sessions: SessionManager?
    let configuration: Configuration
    private var subscribers: [UUID: AsyncStream<FriendFileEvent>.Continuation] = [:]
    /// Direct sends waiting for the friend and a session (cancelled by cancelling the task).
    var connecting: [FileTransferKey: Task<Void, Never>] = [:]
    var outgoing: [FileTransferKey: DirectSend] = [:]
    /// Every direct send's task, from the offer to its end (`stop` cancels them).
    var sending: [FileTransferKey: (id: UUID, task: Task<Void, Never>)] = [:]
    /// Set by `stop`: no send falls back to toxcore after it (a channel the stop closes looks like a broken session).
    var stopped = false
    /// Sends whose session offers to carry on what toxcore has under way, until the receiver answers.
    var handingOver: Set<FileTransferKey> = []
    /// Direct offers waiting for the application, then transfers under way.
    private var incoming: [FileTransferKey: DirectReceive] = [:]
    /// The two loops `start` runs.
    private var tasks: [Task<Void, Never>] = []
    /// Direct offers waiting for the application's answer, each with its expiry.
    private var offerTimers: [FileTransferKey: Task<Void, Never>] = [:]
    /// Channels whose offer is being read.
    private var reading = 0
    /// Transfers each way on the direct path (as on toxcore's).
    static let maxTransfers = 64
    /// The ICE pair the last direct sends ended on, for their reports (at most `maxIcePaths`).
    var icePaths: [FileTransferKey: IcePath] = [:]
    var icePathOrder: [FileTransferKey] = []
    static let maxIcePaths = 256

    /// Files on `node`, the direct path through `sessions` (nil: toxcore only).
    /// `sessions` must list `FriendFileMessage.protocolName` in its
    /// `applicationProtocols` to take files that way.
    public init(node: Carrier, sessions: SessionManager?, configuration: Configuration = Configuration()) {
        self.node = node
        self.sessions = sessions
        self.configuration = configuration
    }

    /// Starts taking direct offers and relaying toxcore's file events; call once.
    public func start() async {
        let events = await node.events()
        tasks.append(
            Task { [weak self] in
                for await event in events {
                    switch event {
                    case .file(let fileEvent): await self?.relay(fileEvent)
                    case .message(let from, nil, let data, _, _): await self?.takeFileMessage(data, from: from)
                    default: break
                    }
                }
            })
        if let sessions {
            let channels = sessions.applicationChannels
            tasks.append(
                Task { [weak self] in
                    for await offered in channels
                    where offered.channel.parameters.protocol == FriendFileMessage.protocolName {
                        // Each offer read on its own: a slow peer holds up no other.
                        Task { await self?.take(offered) }
                    }
                })
        }
    }

    /// Stops: transfers on the direct path are cancelled (toxcore's stop with
    /// the node). Returns once every send has ended, so none of them hands its
    /// file to toxcore afterwards.
    public func stop() async {
        stopped = true
        for task in connecting.values { task.cancel() }
        connecting = [:]
        let sends = sending.values.map(\.task)
        for task in sends { task.cancel() }
        sending = [:]
        for send in outgoing.values { send.cancel("the node stopped") }
        for receive in incoming.values { receive.cancel("the node stopped") }
        for task in tasks { task.cancel() }
        tasks = []
        for timer in offerTimers.values { timer.cancel() }
        offerTimers = [:]
        for subscriber in subscribers.values { subscriber.finish() }
        subscribers = [:]
        for task in sends { await task.value }
    }

    /// Every file event from now on, both paths.
    public func events() -> AsyncStream<FriendFileEvent> {
        let (stream, continuation) = AsyncStream<FriendFileEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        subscribers[id] = continuation
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        return stream
    }

    private func unsubscribe(_ id: UUID) { subscribers[id] = nil }

    /// Toxcore's events, but for its last progress on a transfer a session carries on now.
    private func relay(_ event: FileTransferEvent) {
        if case .progress(let key, _, _) = event, outgoing[key] != nil || incoming[key] != nil { return }
        emit(event, .toxcore)
    }

    func emit(_ event: FileTransferEvent, _ path: FilePath) {
        for subscriber in subscribers.values { subscriber.yield(FriendFileEvent(event, path: path)) }
    }

    // MARK: Receiving

    private func take(_ offered: ApplicationChannel) async {
        let receive = DirectReceive(channel: offered.channel)
        guard let friend = UserId(offered.session.peer), await node.isFriend(friend) else {
            return await receive.refuse("files are taken from friends only")
        }
        guard incoming.count + reading < Self.maxTransfers else {
            return await receive.refuse("\(Self.maxTransfers) files are coming already")
        }
        // One friend has a share of the places, as over toxcore (`CarrierOptions.maxIncomingFilesPerFriend`).
        let perFriend = node.options.maxIncomingFilesPerFriend
        guard incoming.keys.filter({ $0.friend == friend }).count < perFriend else {
            return await receive.refuse("\(perFriend) of your files are under way here, at most \(perFriend)")
        }
        reading += 1
        let maxSize = configuration.maxIncomingSize ?? node.options.maxIncomingFileSize
        let read = await withTimeout(.seconds(10)) { await receive.readOffer(maxSize: maxSize) }
        reading -= 1
        guard case .success(let offer)? = read, let sha256 = Hex.decode(offer.sha256) else {
            if case .none = read { await receive.refuse("no offer within 10 s") }
            return
        }
        let key = FileTransferKey(friend: friend, sha256: sha256, outgoing: false)
        if offer.continuing { return await carryOn(key, receive) }
        guard incoming[key] == nil, !(await node.fileTransfers().contains { $0.key == key }) else {
            return await receive.refuse("this file is coming already")
        }
        incoming[key] = receive
        // An offer the application leaves unanswered would hold a place for ever: refused after the node's timeout.
        let timeout = node.options.fileOfferTimeout
        offerTimers[key] = Task {
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled, offerTimers[key] != nil else { return }
            try? await refuse(key, reason: "not answered within \(timeout)")
        }
        emit(.offered(FileOffer(key: key, name: SafeFileName.make(offer.name), size: offer.size)), .direct)
    }

    /// Takes an offered file into `directory` (created if missing); a file
    /// received in part before, over either path, resumes from its bytes.
    public func accept(_ key: FileTransferKey, into directory: String) async throws(CarrierError) {
        guard let receive = incoming[key] else { return try await node.acceptFile(key, into: directory) }
        guard let timer = offerTimers[key] else { throw .invalidArgument("\(key) is accepted already") }
        let offset = try await receive.accept(key: key, into: directory, reserve: node.options.diskReserve)
        timer.cancel()
        offerTimers[key] = nil
        emit(.accepted(key, offset: offset), .direct)
        receiveDirect(key, receive)
    }

    /// A session offers to carry on a file toxcore is bringing in: toxcore's
    /// transfer gives way, and the session resumes from its partial file in
    /// the directory the application accepted it into (no new offer to answer).
    private func carryOn(_ key: FileTransferKey, _ receive: DirectReceive) async {
        guard incoming[key] == nil, let handOver = await node.handOverFile(key), let directory = handOver.directory
        else {
            return await receive.refuse("no transfer of this file is moving over toxcore to carry on")
        }
        incoming[key] = receive
        emit(.interrupted(key, reason: "going on over a direct session"), .toxcore)
        do {
            let offset = try await receive.accept(key: key, into: directory, reserve: node.options.diskReserve)
            emit(.accepted(key, offset: offset), .direct)
            receiveDirect(key, receive)
        } catch {
            incoming[key] = nil
            await receive.refuse("the receiver cannot carry it on: \(error)")
            emit(.finished(key, .failed("cannot carry on over the session: \(error)")), .direct)
        }
    }

    /// Runs an accepted direct transfer to its end; reports in order, then the end.
    private func receiveDirect(_ key: FileTransferKey, _ receive: DirectReceive) {
        let (reports, reportSink) = AsyncStream<DirectReceive.Report>.makeStream()
        Task {
            let pump = Task { for await report in reports { receiveReport(key, report) } }
            let stall = configuration.stallTimeout ?? node.options.fileStallTimeout
            let ending = await receive.run(progressInterval: configuration.progressInterval, stallTimeout: stall) {
                reportSink.yield($0)
            }
            reportSink.finish()
            await pump.value
            received(key, ending)
        }
    }

    private func receiveReport(_ key: FileTransferKey, _ report: DirectReceive.Report) {
        switch report {
        case .paused(let byPeer): emit(.paused(key, byPeer: byPeer), .direct)
        case .resumed(let byPeer): emit(.resumed(key, byPeer: byPeer), .direct)
        case .progress(let bytes, let total): emit(.progress(key, bytes: bytes, total: total), .direct)
        }
    }

    private func received(_ key: FileTransferKey, _ ending: DirectReceive.Ending) {
        incoming[key] = nil
        switch ending {
        case .finished(let outcome): emit(.finished(key, outcome), .direct)
        case .interrupted(let reason): emit(.interrupted(key, reason: reason), .direct)
        }
    }

    /// Refuses an offered file; the sender hears `reason` at once.
    public func refuse(_ key: FileTransferKey, reason: String? = nil) async throws(CarrierError) {
        guard let receive = incoming[key] else { return try await node.refuseFile(key, reason: reason) }
        guard let timer = offerTimers.removeValue(forKey: key) else {
            throw .invalidArgument("\(key) is accepted already: cancel it instead")
        }
        timer.cancel()
        incoming[key] = nil
        await receive.refuse(reason ?? "refused")
        emit(.finished(key, .cancelled(byPeer: false, reason: reason)), .direct)
    }

    /// Cancels a transfer in either direction, on whichever path it is.
    public func cancel(_ key: FileTransferKey) async throws(CarrierError) {
        if let task = connecting.removeValue(forKey: key) { return task.cancel() }
        if offerTimers[key] != nil { return try await refuse(key, reason: "cancelled by the receiver") }
        guard let direct = directControls(key) else { return try await node.cancelFile(key) }
        direct.cancel(key.outgoing ? "cancelled by the sender" : "cancelled by the receiver")
    }

    private func directControls(_ key: FileTransferKey) -> (any DirectControls)? {
        outgoing[key] ?? incoming[key]
    }

    /// Pauses a transfer that is moving; the friend sees `.paused(byPeer: true)`.
    public func pause(_ key: FileTransferKey) async throws(CarrierError) {
        guard let direct = directControls(key) else {
            return try await node.pauseFile(key)
        }
        direct.pause()
        emit(.paused(key, byPeer: false), .direct)
    }

    /// Resumes a transfer this side paused.
    public func resume(_ key: FileTransferKey) async throws(CarrierError) {
        guard let direct = directControls(key) else {
            return try await node.resumeFile(key)
        }
        direct.resume()
        emit(.resumed(key, byPeer: false), .direct)
    }
}
