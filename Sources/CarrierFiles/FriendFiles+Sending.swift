import AsyncExtras
import CarrierNode
import CarrierSessions
import FileSafety
import Foundation
import RtcFileTransfer
import RtcPeer

#if canImport(Glibc)
    import Glibc
#endif

/// Sending: a session first, toxcore when none connects or it breaks, and a
/// session again later to carry on what toxcore has under way.
extension FriendFiles {
    /// Offers the file at `path` to `friend`; returns once it is hashed, and the
    /// transfer goes on in the background (events). Directly if it can, else over toxcore.
    public func send(at path: String, to friend: UserId, name: String? = nil) async throws(CarrierError)
        -> FileTransferKey
    {
        guard await node.isFriend(friend) else { throw .notFriend(friend.description) }
        // A Carrier peer takes files only as Beagle's file messages.
        if await node.speaksOurExtras(friend) == false {
            return try await sendAsMessage(at: path, to: friend, name: name)
        }
        guard configuration.direct, let sessions else {
            return try await node.sendFile(at: path, to: friend, name: name)
        }
        let (fd, size, sha256) = try await FileDigest.openHashed(path)
        let key = FileTransferKey(friend: friend, sha256: sha256, outgoing: true)
        guard outgoing[key] == nil, connecting[key] == nil, !(await node.fileTransfers().contains { $0.key == key })
        else {
            close(fd)
            throw .invalidArgument("\(path) is being sent to \(friend) already")
        }
        let fileName = SafeFileName.truncated(name ?? String(path.split(separator: "/").last ?? "file"), toBytes: 255)
        // A send of this file that ended on toxcore may still wait to hand it over: this one replaces it.
        sending.removeValue(forKey: key)?.task.cancel()
        let id = UUID()
        let task = Task {
            await self.sendDirect(key, fd: fd, size: size, name: fileName, sessions: sessions)
            if sending[key]?.id == id { sending[key] = nil }
        }
        connecting[key] = task
        sending[key] = (id, task)
        return key
    }

    /// The direct attempt; toxcore when it cannot finish it; and while toxcore
    /// carries the file, a session again every `handOverInterval`, to carry it
    /// on from the receiver's partial file.
    private func sendDirect(
        _ key: FileTransferKey, fd: Int32, size: UInt64, name: String, sessions: SessionManager
    ) async {
        defer { close(fd) }
        await waitForFriend(key)
        var attempt = Task.isCancelled ? nil : await openChannel(to: key.friend, name: name, sessions: sessions)
        connecting[key] = nil
        if Task.isCancelled {
            attempt?.1.close()
            return emit(.finished(key, .cancelled(byPeer: false, reason: "cancelled by the sender")), .direct)
        }
        var continuing = false
        if attempt == nil {
            let why = "no session with the friend within \(configuration.connectTimeout)"
            guard await fallBack(key, fd: fd, size: size, name: name, why: why) else { return }
        }
        while !Task.isCancelled {
            if let (session, channel) = attempt {
                let end = await runDirect(
                    key, fd: fd, size: size, name: name, session: session, channel: channel, continuing: continuing)
                guard end == .fellBack else { return }
            }
            guard let interval = configuration.handOverInterval else { return }
            try? await Task.sleep(for: interval)
            guard !Task.isCancelled, let ready = await handOverReady(key, size: size) else { return }
            attempt = ready ? await openChannel(to: key.friend, name: name, sessions: sessions) : nil
            continuing = true
        }
    }

    /// The friend online first (toxcore's path waits for that too): the session's time starts then.
    private func waitForFriend(_ key: FileTransferKey) async {
        while !Task.isCancelled {
            let asked = ContinuousClock.now
            if await node.waitUntilConnected(to: key.friend, timeout: .seconds(1)) { return }
            // An answer at once: the node stopped. Toxcore's path says so.
            if ContinuousClock.now - asked < .milliseconds(500) { return }
        }
    }

    /// A session with the friend and a file channel on it, within `connectTimeout`.
    private func openChannel(to friend: UserId, name: String, sessions: SessionManager) async -> (
        Session, DataChannel
    )? {
        let friend = friend.description
        // A session that never comes up must not hold the file: toxcore takes it at the deadline.
        let open: @Sendable () async -> (Session, DataChannel)? = {
            guard let session = try? await sessions.session(with: friend) else { return nil }
            var parameters = DataChannelParameters(label: name, protocol: FriendFileMessage.protocolName)
            parameters.ordered = true
            return (try? await session.openChannel(parameters)).map { (session, $0) }
        }
        return await withDeadline(configuration.connectTimeout, late: { $0.1.close() }, open)
    }

    /// How a run on a session ended for the file.
    private enum DirectEnd: Equatable {
        /// The transfer is over (its `.finished` went out).
        case ended
        /// Toxcore carries it (again, or still).
        case fellBack
    }

    /// One run on a session. `continuing`: toxcore has the file under way, and
    /// the session offers to carry it on; toxcore's transfer gives way only
    /// when the receiver accepts (`sendReport`), and goes on when it does not.
    private func runDirect(
        _ key: FileTransferKey, fd: Int32, size: UInt64, name: String, session: Session, channel: DataChannel,
        continuing: Bool
    ) async -> DirectEnd {
        if continuing {
            guard await node.beginHandOver(key) else {
                channel.close()
                return .fellBack
            }
            handingOver.insert(key)
        }
        // Reports in order, all out before the end's event.
        let (reports, reportSink) = AsyncStream<DirectSend.Report>.makeStream()
        let send = DirectSend(
            channel: channel, fd: fd, name: name, size: size, sha256: key.sha256Hex, continuing: continuing,
            progressInterval: configuration.progressInterval
        ) {
            reportSink.yield($0)
        }
        let pump = Task { for await report in reports { await sendReport(key, size: size, report) } }
        outgoing[key] = send
        let outcome = await send.run()
        remember(try? await session.stats().path, of: key)
        outgoing[key] = nil
        reportSink.finish()
        await pump.value
        if handingOver.remove(key) != nil {
            // Not taken over: toxcore goes on (or ends, if the friend cancelled it meanwhile).
            await node.endHandOver(key)
            if case .cancelled(byPeer: false, _) = outcome {
                try? await node.cancelFile(key)
                return .ended
            }
            // A node that takes no file over sessions answers nothing: no more tries.
            return outcome == .interrupted(answered: false) ? .ended : .fellBack
        }
        switch outcome {
        case .confirmed: emit(.finished(key, .completed(path: nil, bytes: size)), .direct)
        case .rejected(let reason), .failed(let reason): emit(.finished(key, .failed(reason)), .direct)
        case .refused(let reason): emit(.finished(key, .cancelled(byPeer: true, reason: reason)), .direct)
        case .cancelled(let byPeer, let reason):
            emit(.finished(key, .cancelled(byPeer: byPeer, reason: reason)), .direct)
        case .interrupted(let answered):
            if answered { emit(.interrupted(key, reason: "the session broke; going on over toxcore"), .direct) }
            let why = answered ? "the session broke part-way" : "the friend's node took no file over the session"
            // A node that takes no file over sessions is not asked again.
            return await fallBack(key, fd: fd, size: size, name: name, why: why) && answered ? .fellBack : .ended
        }
        return .ended
    }

    /// Whether to offer a session for what toxcore carries now; nil once
    /// there is nothing left to hand over (toxcore's transfer is over, or
    /// what is left is under `handOverMinimum`).
    private func handOverReady(_ key: FileTransferKey, size: UInt64) async -> Bool? {
        guard let status = await node.fileTransfers().first(where: { $0.key == key }) else { return nil }
        guard size - min(status.bytes, size) >= configuration.handOverMinimum else { return nil }
        return status.phase == .transferring && !status.pausedByUs && !status.pausedByPeer
    }

    private func sendReport(_ key: FileTransferKey, size: UInt64, _ report: DirectSend.Report) async {
        switch report {
        case .accepted(let offset):
            if handingOver.remove(key) != nil {
                // The receiver gave toxcore's transfer up for this session: so does the sender.
                _ = await node.handOverFile(key)
                emit(.interrupted(key, reason: "going on over a direct session"), .toxcore)
            }
            emit(.accepted(key, offset: offset), .direct)
        case .paused(let byPeer): emit(.paused(key, byPeer: byPeer), .direct)
        case .resumed(let byPeer): emit(.resumed(key, byPeer: byPeer), .direct)
        case .progress(let bytes): emit(.progress(key, bytes: bytes, total: size), .direct)
        }
    }

    /// Toxcore takes the file from the same open descriptor (a copy: ours
    /// closes when the direct attempts end), hashed once for both paths.
    /// False when toxcore cannot take it (the transfer's end emitted) or `stop` ran.
    private func fallBack(_ key: FileTransferKey, fd: Int32, size: UInt64, name: String, why: String) async -> Bool {
        // Stopped: the channel closed under the send, and toxcore must not take the file on alone.
        guard !stopped else { return false }
        Self.log.warning("\(key) goes over toxcore: \(why)")
        let copy = dup(fd)
        do {
            guard copy >= 0 else { throw CarrierError.storage(String(cString: strerror(errno))) }
            _ = try await node.sendFile(descriptor: copy, size: size, sha256: key.sha256, to: key.friend, name: name)
            return true
        } catch {
            emit(.finished(key, .failed("neither path: \(why); toxcore: \(error)")), .toxcore)
            return false
        }
    }

    /// The ICE pair (host, server-reflexive, relayed over UDP, TCP or TLS) that
    /// carried the last bytes of a file sent directly, nil for one that went over toxcore.
    public func icePath(of key: FileTransferKey) -> IcePath? { icePaths[key] }

    /// Keeps the last `maxIcePaths`: a node that sends for weeks does not grow.
    private func remember(_ path: IcePath?, of key: FileTransferKey) {
        guard let path else { return }
        if icePaths.updateValue(path, forKey: key) == nil { icePathOrder.append(key) }
        while icePathOrder.count > Self.maxIcePaths { icePaths[icePathOrder.removeFirst()] = nil }
    }
}
