import AsyncExtras
import CarrierLog
import Foundation
import RtcFileTransfer
import RtcMedia
import RtcPeer

/// One call: its state machine, its peer connection, its media and data
/// channel. Inputs are handled one at a time, in order, on this actor; the
/// machine's outputs are carried out before the next input is taken.
actor CallSession {
    nonisolated let id: String
    nonisolated let peerId: String
    private(set) var call: Call
    private var machine: CallMachine
    /// The peer connection, once made. An outgoing call comes with one; an
    /// incoming call makes it when it is accepted (`makeConnection`), so an
    /// offer that is refused, or that rings out, costs no certificate, ICE
    /// agent or socket: a friend that offers again and again builds nothing.
    private var connection: PeerConnection?
    private let makeConnection: @Sendable () async throws -> PeerConnection
    private let provider: any SignalingProvider
    var media: CallMedia
    /// Files opened for the sections we send on, until their senders take them
    /// (each handed to its sender when the call connects).
    private var sources: [MediaKind: any MediaSource]
    /// The files still opening (`setMedia`); `startMedia` takes them.
    private var opening: Task<[MediaKind: any MediaSource], any Error>?
    let report: @Sendable (CallEvent) -> Void
    private let inputs: AsyncStream<CallMachine.Input>.Continuation
    private let inputStream: AsyncStream<CallMachine.Input>
    private var tasks: [Task<Void, Never>] = []
    private var senders: [MediaSender] = []
    private var receivers: [MediaReceiver] = []
    private var receiverStats: [MediaReceiver.Stats] = []
    private var senderStats: [MediaSender.Stats] = []
    private let recordingClock = RecordingClock()
    /// The call's WebM recording, when it records into one file.
    private var webm: WebmRecording?
    /// The file endpoint on the call's data channel, once it is there (`CallSession+DataChannel.swift`).
    var endpoint: FileTransferEndpoint?
    /// Who waits for that endpoint (a file or message to send before the channel came).
    var channelWaiters: [CheckedContinuation<FileTransferEndpoint?, Never>] = []
    private let started = ContinuousClock.now
    private var setupStarted = ContinuousClock.now
    private(set) var setupMs: Double?
    private var failure: String?
    let options: Options
    /// Our description went out: candidates may follow (held until then, since a peer cannot use them before).
    private var described = false
    private var heldCandidates: [RtcSignal] = []
    private(set) var iceMs: Double?
    /// The ICE path when the call connected, and at its close (it may have
    /// moved from a relayed pair to a direct one meanwhile).
    private(set) var path: IcePath?
    /// Opens once the senders the call connected with are made (or the call closed first).
    private let mediaStarted = AsyncLatch()

    /// How this call speaks to its peer (from `CallClient.Configuration`).
    struct Options: Sendable {
        var fileProtocol = FileProtocolChoice.automatic
        var trickle = true
        var announceAccept = true
        /// Candidates wait for our description (peers that cannot queue them). Calls
        /// send them at once: the call protocol's peers queue them, and the caller's
        /// agent then has them all before its checks begin.
        var holdCandidates = false
    }
    /// Seconds without a packet after which a connected call counts as disconnected.
    static let silenceLimit = 3.0

    init(
        call: Call, machine: CallMachine, peer: PeerConnection?,
        makePeer: @escaping @Sendable () async throws -> PeerConnection, provider: any SignalingProvider,
        media: CallMedia, options: Options = Options(), report: @escaping @Sendable (CallEvent) -> Void
    ) {
        sources = [:]
        self.options = options
        id = call.id
        peerId = call.peer
        self.call = call
        // An incoming call begins with its offer's arrival.
        if call.direction == .incoming { self.call.timeline.offerReceived = call.startDate }
        self.machine = machine
        connection = peer
        makeConnection = makePeer
        self.provider = provider
        self.media = media
        self.report = report
        (inputStream, inputs) = AsyncStream<CallMachine.Input>.makeStream()
    }

    /// Queues an input; inputs are handled in order.
    nonisolated func post(_ input: CallMachine.Input) { inputs.yield(input) }

    /// Starts the session: listens to the transport, ticks the timers, carries out the first outputs.
    func start(_ outputs: [CallMachine.Output]) async {
        // Subscribe first (the offer's candidates must not be missed), act, then take inputs.
        if let connection { await listen(to: connection) }
        await perform(outputs)
        let stream = inputStream
        tasks.append(Task { [weak self] in for await input in stream { await self?.handle(input) } })
        tasks.append(
            Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(250))
                    await self?.watch()
                }
            })
    }

    /// The media choice (the application's, for an incoming call, before
    /// accepting it), its files still opening: the description needs only
    /// which kinds we send, the senders wait for the files (`startMedia`).
    func setMedia(_ media: CallMedia, opening: Task<[MediaKind: any MediaSource], any Error>) {
        self.media = media
        self.opening = opening
    }

    /// The call's peer connection, made now if it has none yet (an incoming
    /// call being accepted).
    func peer() async throws -> PeerConnection {
        if let connection { return connection }
        let made = try await makeConnection()
        connection = made
        await listen(to: made)
        return made
    }

    /// Takes the connection's events; an outgoing data call opens its channel.
    private func listen(to peer: PeerConnection) async {
        let events = await peer.events()
        if call.direction == .outgoing, call.options.contains(.data) {
            // Its DCEP protocol says that we speak the binary file protocol (docs/file-protocol.md).
            let channel = await peer.createDataChannel(
                .init(label: "data", protocol: FileTransferEndpoint.protocolName))
            attach(channel, openedHere: true)
        }
        tasks.append(Task { [weak self] in for await event in events { await self?.peerEvent(event) } })
    }

    private func now() -> Double {
        (ContinuousClock.now - started).inSeconds
    }

    private func handle(_ input: CallMachine.Input) async {
        if case .remote(let signal) = input {
            switch signal.type {
            case .offer: call.timeline.offerReceived = call.timeline.offerReceived ?? Date()
            case .answer: call.timeline.answerReceived = call.timeline.answerReceived ?? Date()
            default: break
            }
        }
        await perform(machine.handle(input, now: now()))
    }

    private func perform(_ outputs: [CallMachine.Output]) async {
        for output in outputs { await perform(output) }
    }

    private func perform(_ output: CallMachine.Output) async {
        do {
            switch output {
            case .sendOffer:
                setupStarted = .now
                let peer = try await self.peer()
                let offer = try await peer.createOffer()
                try await peer.setLocalDescription(offer)
                await describe(RtcSignal(type: .offer, sdp: offer, options: call.options))
            case .answer(let offer):
                setupStarted = .now
                try await applyRemoteOffer(offer)
                if options.announceAccept { await send(RtcSignal(type: .action, action: .accept)) }
            case .renegotiate(let offer):
                try await applyRemoteOffer(offer)
                await startMedia()  // a section the offer added may have something to send
            case .reoffer(let iceRestart):
                let peer = try await self.peer()
                let offer = try await peer.createOffer(iceRestart: iceRestart)
                try await peer.setLocalDescription(offer)
                await describe(RtcSignal(type: .offer, sdp: offer, options: call.options))
            case .rollback:
                try await self.peer().rollback()
            case .applyAnswer(let sdp):
                try await self.peer().setRemoteDescription(sdp, type: .answer)
                if call.state == .connected || call.state == .disconnected { await startMedia() }
            case .addCandidates(let candidates):
                // A candidate refused is counted in the peer's stats (`droppedCandidates`); the others still go.
                let peer = try await self.peer()
                for candidate in candidates { try? await peer.addIceCandidate(candidate.sdp) }
            case .send(let signal):
                await send(signal)
            case .askApplication:
                report(.incoming(call))
            case .startMedia:
                await startMedia()
            case .close:
                await close()
            case .stateChanged(let state):
                call.state = state
                call.outages = machine.recovery.losses
                call.longestOutage = machine.recovery.longestOutage
                if state == .connected, call.connectedDate == nil {
                    call.connectedDate = Date()
                    setupMs = (ContinuousClock.now - setupStarted).milliseconds
                }
                if state == .ended {
                    call.endDate = Date()
                    call.endReason = machine.endReason
                    call.endDetail = failure ?? machine.endDetail
                    report(.ended(call))
                } else {
                    report(.stateChanged(call))
                }
            }
        } catch {
            // An SDP we cannot use: the call cannot go on.
            failure = failure ?? "\(error)"
            post(.hangUp)
        }
    }

    private func applyRemoteOffer(_ offer: String) async throws {
        let peer = try await self.peer()
        try await peer.setRemoteDescription(offer, type: .offer)
        await media.receiveOnlyWhereNothingToSend(on: peer)
        let answer = try await peer.createAnswer()
        try await peer.setLocalDescription(answer)
        await describe(RtcSignal(type: .answer, sdp: answer))
    }

    /// Sends an offer or answer, then the candidates held for it. Not
    /// trickling, it waits for gathering to complete and carries every
    /// candidate, unless that makes it too large for the signaling (then it
    /// goes bare).
    private func describe(_ signal: RtcSignal) async {
        var signal = signal
        let bare = signal.sdp
        if !options.trickle, let peer = connection {
            _ = await peer.waitForGatheringComplete()
            signal.sdp = await peer.currentLocalDescription() ?? bare
        }
        signal.callId = id
        markSent(signal)
        do { try await provider.send(signal, to: peerId) } catch SignalError.tooLarge where signal.sdp != bare {
            signal.sdp = bare
            await send(signal)
        } catch {
            failure = failure ?? "\(signal.type.rawValue): \(error)"
            post(.undeliverable)
        }
        described = true
        let held = heldCandidates
        heldCandidates = []
        for candidate in held { await send(candidate) }
    }

    /// The first offer and answer we send, in the call's timeline.
    private func markSent(_ signal: RtcSignal) {
        switch signal.type {
        case .offer: call.timeline.offerSent = call.timeline.offerSent ?? Date()
        case .answer: call.timeline.answerSent = call.timeline.answerSent ?? Date()
        default: break
        }
    }

    private func send(_ signal: RtcSignal) async {
        var signal = signal
        signal.callId = id
        markSent(signal)
        do { try await provider.send(signal, to: peerId) } catch {
            failure = failure ?? "\(signal.type.rawValue): \(error)"
            post(.undeliverable)
        }
    }

    private func peerEvent(_ event: PeerEvent) async {
        switch event {
        case .localCandidate(let candidate, let mid, let index):
            guard options.trickle else { return }  // every candidate rides in the description
            let signal = RtcSignal(
                type: .candidate, candidates: [.init(sdp: candidate, sdpMLineIndex: index, sdpMid: mid)])
            if described || !options.holdCandidates {
                await send(signal)
            } else if heldCandidates.count < 256 {
                heldCandidates.append(signal)
            }
        case .iceStateChanged(let state):
            if state == .connected || state == .completed, iceMs == nil {
                iceMs = (ContinuousClock.now - setupStarted).milliseconds
                call.timeline.iceConnected = Date()
            }
        case .connectionStateChanged(let state):
            switch state {
            case .connected:
                call.timeline.transportConnected = call.timeline.transportConnected ?? Date()
                path = await connection?.stats().path ?? path
                post(.transportConnected)
            case .disconnected: post(.transportDisconnected)
            case .failed: post(.transportFailed)
            case .closed where call.state != .ended: post(.transportClosed)  // the peer closed DTLS without a bye
            default: break
            }
        case .track(let mid, let kind):
            await startReceiving(mid: mid, kind: kind)
        case .dataChannel(let channel):
            attach(channel)
        default:
            break
        }
    }

    /// Timers, and silence: a connected call that hears nothing is disconnected.
    private func watch() async {
        post(.tick)
        guard call.state == .connected || call.state == .disconnected, let peer = connection else { return }
        // Without a media section nothing is heard every second (SCTP heartbeats
        // come every 30 s): a data-only session leaves this to ICE consent.
        guard await !peer.transceiverInfos.isEmpty else { return }
        let silent = await peer.secondsSinceLastPacket() > Self.silenceLimit
        if silent, call.state == .connected { post(.transportDisconnected) }
        if !silent, call.state == .disconnected, await peer.connectionState == .connected { post(.transportConnected) }
    }

    // MARK: Media

    private func startMedia() async {
        if let pending = opening {
            let opened = try? await pending.value
            // Taken once, by whichever start gets here first after the files opened.
            if opening != nil {
                opening = nil
                sources.merge(opened ?? [:]) { current, _ in current }
            }
        }
        guard let peer = connection else {
            mediaStarted.open()
            return
        }
        for info in await peer.transceiverInfos where info.direction == .sendrecv || info.direction == .sendonly {
            guard !senders.contains(where: { $0.mid == info.mid }), let source = sources.removeValue(forKey: info.kind)
            else { continue }
            let sender = MediaSender(
                peer: peer, mid: info.mid, source: source, loop: media.loop, duration: media.duration)
            senders.append(sender)
            await sender.start()
        }
        mediaStarted.open()
    }

    private func startReceiving(mid: String, kind: MediaKind) async {
        guard let peer = connection else { return }
        if webm == nil, media.recordsWebm {
            do { webm = try await media.webmRecording(on: peer, clock: recordingClock) } catch {
                failure = failure ?? "recording: \(error)"
            }
        }
        guard
            let receiver = media.receiver(
                forTrack: mid, kind: kind, peer: peer, clock: recordingClock, alongside: receivers, webm: webm)
        else { return }
        receivers.append(receiver)
        await receiver.start()
    }

    /// Adds a video section to a call under way (sending `path` if given) and offers again.
    func addVideo(_ path: String?) async throws {
        let peer = try await self.peer()
        guard !(await peer.transceiverInfos.contains { $0.kind == .video }) else { return }
        if let path { sources[.video] = try MediaSources.open(path, kind: .video) }
        media.video = path
        if !call.options.contains(.video) { call.options.append(.video) }
        await peer.addTransceiver(.video, direction: path != nil ? .sendrecv : .recvonly)
        post(.renegotiate(iceRestart: false))
    }

    func peerStats() async -> PeerStats { await connection?.stats() ?? .none }

    /// Until every sender has sent its file (or its duration); a looping sender never has.
    func waitUntilMediaSent() async {
        await mediaStarted.wait()
        for sender in senders { await sender.waitUntilFinished() }
    }

    func setMuted(_ muted: Bool, kind: MediaKind) async {
        for sender in senders where sender.kind == kind { await sender.setMuted(muted) }
    }

    func replaceSource(_ path: String, kind: MediaKind) async throws {
        let source = try MediaSources.open(path, kind: kind)
        for sender in senders where sender.kind == kind { try await sender.replaceSource(source) }
    }

    func mediaStats() async -> (sent: [MediaSender.Stats], received: [MediaReceiver.Stats]) {
        if call.state == .ended { return (senderStats, receiverStats) }
        var sent: [MediaSender.Stats] = []
        for sender in senders { sent.append(await sender.currentStats()) }
        var received: [MediaReceiver.Stats] = []
        for receiver in receivers { received.append(await receiver.currentStats()) }
        return (sent, received)
    }

    // MARK: Close

    /// Set as `close` begins: from then on nothing may wait for the channel.
    var closing = false

    private func close() async {
        closing = true
        mediaStarted.open()
        for sender in senders {
            await sender.stop()
            senderStats.append(await sender.currentStats())
        }
        for receiver in receivers { receiverStats.append(await receiver.stop()) }
        webm?.close()
        senders = []
        receivers = []
        sources = [:]  // opened for a section that never sent: their files close now
        opening?.cancel()
        opening = nil
        await endpoint?.cancel()
        if let connection {
            path = await connection.stats().path ?? path
            await connection.close()
        }
        let waiters = channelWaiters
        channelWaiters = []
        for waiter in waiters { waiter.resume(returning: nil) }
        for task in tasks { task.cancel() }
        inputs.finish()
    }
}

/// Why a call operation failed.
public enum CallError: Error, Equatable, Sendable, CustomStringConvertible {
    case noSuchCall(String)
    case noDataChannel
    case notAFriend(String)
    case signaling(String)

    /// What went wrong, in words for a log or a user.
    public var description: String {
        switch self {
        case .noSuchCall(let id): "no call \(id)"
        case .noDataChannel: "the call has no open data channel (call with the data option)"
        case .notAFriend(let peer): "\(peer) is not a friend: only friends can be called"
        case .signaling(let why): why
        }
    }
}
