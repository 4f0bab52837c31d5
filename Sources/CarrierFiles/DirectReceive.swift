import CarrierNode
import FileSafety
import Foundation
import RtcFileTransfer
import RtcPeer

/// One file coming in on a `carrier-friend-file/1` data channel: reads the
/// offer, waits for the application's answer, writes the bytes into the same
/// partial file toxcore's path uses (`DIR/.carrier-partial/`, named after the
/// sender and the SHA-256, so a transfer cut on either path resumes on the
/// other), then checks size and SHA-256 off the actor, stores the file under a
/// name that replaces nothing, and sends the verdict.
actor DirectReceive {
    /// What wakes the loop.
    enum Input: Sendable {
        case channel(DataChannel.Event)
        case pause, resume
        case cancel(String)
        /// Time passes: a transfer with nothing arriving for its stall timeout ends.
        case tick
    }

    /// How it ended on this channel.
    enum Ending: Sendable, Equatable {
        case finished(FileTransferOutcome)
        /// The channel closed part-way: the bytes are kept for a resume.
        case interrupted(String)
    }

    /// What the owner hears while it runs.
    enum Report: Sendable {
        case paused(byPeer: Bool)
        case resumed(byPeer: Bool)
        case progress(UInt64, total: UInt64)
    }

    private let channel: DataChannel
    private let inputs: AsyncStream<Input>
    private let sink: AsyncStream<Input>.Continuation
    private var pump: Task<Void, Never>?
    private var receiver: FriendFileReceiver?
    private var partial: PartialFile?
    private var directory: String?
    private var name = ""

    init(channel: DataChannel) {
        self.channel = channel
        (inputs, sink) = AsyncStream<Input>.makeStream()
    }

    nonisolated func pause() { sink.yield(.pause) }
    nonisolated func resume() { sink.yield(.resume) }
    nonisolated func cancel(_ reason: String) { sink.yield(.cancel(reason)) }

    /// The channel's first message, as an offer (name made safe), or why it is refused (told to the peer).
    func readOffer(maxSize: UInt64) async -> Result<FriendFileReceiver, FriendFileReceiver.OfferRefusal> {
        let events = channel.events
        let sink = sink
        pump = Task {
            for await event in events { sink.yield(.channel(event)) }
            sink.yield(.channel(.closed))
        }
        // One reader at a time: the offer's, then the run's (sequential iterators of one AsyncStream).
        for await input in inputs {
            switch input {
            case .channel(.text(let text)):
                let result = FriendFileReceiver.read(offer: text, maxSize: maxSize)
                switch result {
                case .success(let offered):
                    receiver = offered
                    name = SafeFileName.make(offered.name)
                case .failure(let refusal):
                    refuse(refusal.reason)
                }
                return result
            case .channel(.closed):
                return .failure(.init(reason: "the channel closed before the offer"))
            case .cancel(let reason):
                refuse(reason)
                return .failure(.init(reason: reason))
            default:
                continue
            }
        }
        return .failure(.init(reason: "the channel closed before the offer"))
    }

    /// The application takes the file into `directory`: opens the partial
    /// file and answers `accept` at the bytes it holds; returns that offset.
    func accept(key: FileTransferKey, into directory: String, reserve: UInt64 = 0) throws(CarrierError) -> UInt64 {
        guard var receiver else { throw .invalidArgument("no such offer: \(key)") }
        if let available = Carrier.freeBytes(directory), available < receiver.size + reserve {
            throw .storage(
                "\(directory) has \(available) bytes free; the file needs \(receiver.size) and \(reserve) stay free")
        }
        guard let (partial, have) = PartialFile.open(directory: directory, key: key, size: receiver.size) else {
            throw .storage("cannot write in \(directory): \(String(cString: strerror(errno)))")
        }
        let answer = receiver.accept(have: have)
        self.receiver = receiver
        self.partial = partial
        self.directory = directory
        channel.tell(answer)
        return receiver.position
    }

    /// The application does not take the file; the sender hears the reason at once.
    func refuse(_ reason: String) {
        channel.tell(FriendFileMessage.refuse(reason: reason))
        close()
    }

    /// Takes the bytes to the verdict (after `accept`).
    func run(progressInterval: Duration, stallTimeout: Duration = .seconds(600), report: @Sendable (Report) -> Void)
        async -> Ending
    {
        defer { close() }
        guard var receiver, let partial else { return .finished(.failed("not accepted")) }
        var lastReport = ContinuousClock.now
        // A sender that keeps the channel open and sends nothing (or pauses for
        // ever) would hold one of the friend's places: it ends after `stallTimeout`.
        var lastActivity = ContinuousClock.now
        var pausedHere = false
        let sink = sink
        let ticker = Task {
            let tick = min(stallTimeout / 4, .seconds(1))
            while !Task.isCancelled {
                try? await Task.sleep(for: tick)
                sink.yield(.tick)
            }
        }
        defer { ticker.cancel() }
        func end(_ ending: Ending) -> Ending {
            self.receiver = receiver
            return ending
        }
        if receiver.complete { return end(await verify(&receiver, partial)) }
        for await input in inputs {
            switch input {
            case .channel(.binary(let bytes)):
                lastActivity = .now
                switch receiver.bytes(bytes.count) {
                case .violation(let reason):
                    return end(abandon(partial, reason: reason, failed: true))
                case .write(let position, let complete):
                    guard partial.write(bytes, at: position), !complete || partial.flush() else {
                        return end(abandon(partial, reason: "the receiver cannot write its file", failed: true))
                    }
                    if complete {
                        report(.progress(receiver.position, total: receiver.size))
                        return end(await verify(&receiver, partial))
                    }
                    if ContinuousClock.now - lastReport >= progressInterval {
                        lastReport = .now
                        report(.progress(receiver.position, total: receiver.size))
                    }
                }
            case .channel(.text(let text)):
                lastActivity = .now
                guard let message = FriendFileMessage(json: text) else { continue }
                switch receiver.received(message) {
                case .paused?: report(.paused(byPeer: true))
                case .resumed?: report(.resumed(byPeer: true))
                case .cancelled(let reason)?:
                    partial.remove()
                    return end(.finished(.cancelled(byPeer: true, reason: reason)))
                case .violation(let reason)?: return end(abandon(partial, reason: reason, failed: true))
                case nil: break
                }
            case .channel(.closed):
                partial.close()
                return end(.interrupted("the session closed after \(receiver.position) bytes"))
            case .channel:
                break
            case .pause:
                pausedHere = true
                if let message = receiver.pause() { channel.tell(message) }
            case .resume:
                pausedHere = false
                lastActivity = .now
                if let message = receiver.resume() { channel.tell(message) }
            case .tick:
                guard !pausedHere, ContinuousClock.now - lastActivity > stallTimeout else { continue }
                let reason = "stalled: nothing arrived for \(stallTimeout)"
                channel.tell(FriendFileMessage.cancel(reason: reason))
                partial.close()  // kept for a resume
                return end(.finished(.failed(reason)))
            case .cancel(let reason):
                return end(abandon(partial, reason: reason, failed: false))
            }
        }
        partial.close()
        return end(.interrupted("the session closed after \(receiver.position) bytes"))
    }

    /// Checks size and SHA-256 (as written, or read back on a thread of its own), stores the file, sends the verdict.
    private func verify(_ receiver: inout FriendFileReceiver, _ partial: PartialFile) async -> Ending {
        let size = partial.size
        let fd = partial.fd
        let digest =
            size == receiver.size
            ? await FileDigest.sha256(written: partial.sha256AsWritten(size: size), fd: fd, size: size) : nil
        guard let digest, Sha256.hex(digest) == receiver.sha256 else {
            partial.remove()
            let reason = digest == nil ? "the size or the file's reading failed" : "the SHA-256 differs"
            channel.tell(receiver.verdict(ok: false, reason: reason))
            return .finished(.failed(reason))
        }
        partial.close()
        do {
            let path = try FilePlacement.place(partial.path, in: directory ?? ".", as: name)
            channel.tell(receiver.verdict(ok: true, reason: nil))
            return .finished(.completed(path: path, bytes: size))
        } catch {
            unlink(partial.path)
            channel.tell(receiver.verdict(ok: false, reason: "\(error)"))
            return .finished(.failed("\(error)"))
        }
    }

    /// Ends the transfer here: tells the sender, deletes the partial file.
    private func abandon(_ partial: PartialFile, reason: String, failed: Bool) -> Ending {
        channel.tell(FriendFileMessage.cancel(reason: reason))
        partial.remove()
        return .finished(failed ? .failed(reason) : .cancelled(byPeer: false, reason: reason))
    }

    private func close() {
        pump?.cancel()
        pump = nil
        channel.close()
    }
}
