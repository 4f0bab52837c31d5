import AsyncExtras
import FileSafety
import Foundation
import RtcFileTransfer
import RtcPeer

#if canImport(Glibc)
    import Glibc
#endif

/// One file going out on a `carrier-friend-file/1` data channel: drives a
/// `FriendFileSender` with the channel's events, this side's pause, resume and
/// cancel, and the verdict's timer, all as one stream of inputs, and reads
/// the file with `pread` for each block the sender asks for.
actor DirectSend {
    /// What wakes the loop.
    enum Input: Sendable {
        case channel(DataChannel.Event)
        case pause, resume
        case cancel(String)
        case verdictWaitEnded
    }

    /// What the owner hears while it runs (the sender's notices, and bytes the peer has).
    enum Report: Sendable {
        case accepted(offset: UInt64)
        case paused(byPeer: Bool)
        case resumed(byPeer: Bool)
        /// Bytes the receiver has (sent and taken by SCTP), of the file's size.
        case progress(UInt64)
    }

    static let highWater = 4 << 20
    static let lowWater = 1 << 20

    private var sender: FriendFileSender
    private let channel: DataChannel
    private let fd: Int32
    private let inputs: AsyncStream<Input>
    private let sink: AsyncStream<Input>.Continuation
    private let report: @Sendable (Report) -> Void
    private var verdictTimer: Task<Void, Never>?
    private let progressInterval: Duration

    /// `fd` stays the owner's (open for reading; not closed here); `continuing`
    /// offers to carry on a transfer toxcore has under way.
    init(
        channel: DataChannel, fd: Int32, name: String, size: UInt64, sha256: String, continuing: Bool = false,
        progressInterval: Duration, report: @escaping @Sendable (Report) -> Void
    ) {
        self.channel = channel
        self.fd = fd
        self.report = report
        self.progressInterval = progressInterval
        sender = FriendFileSender(name: name, size: size, sha256: sha256, continuing: continuing)
        (inputs, sink) = AsyncStream<Input>.makeStream()
    }

    nonisolated func pause() { sink.yield(.pause) }
    nonisolated func resume() { sink.yield(.resume) }
    nonisolated func cancel(_ reason: String) { sink.yield(.cancel(reason)) }

    /// Runs to the end on this channel; closes the channel.
    func run() async -> FriendFileSender.Outcome {
        channel.bufferedAmountLowThreshold = Self.lowWater
        let events = channel.events
        let sink = sink
        let pump = Task {
            for await event in events { sink.yield(.channel(event)) }
            sink.yield(.channel(.closed))
        }
        defer {
            pump.cancel()
            verdictTimer?.cancel()
            channel.close()
        }
        var open = channel.readyState == .open
        var reported: UInt64 = 0
        var lastReport = ContinuousClock.now
        var block = [UInt8]()
        for await input in inputs {
            switch input {
            case .channel(.open): open = true
            case .channel(.text(let text)):
                guard let message = FriendFileMessage(json: text) else { continue }  // newer peers' messages
                switch sender.received(message) {
                case .accepted(let offset)?:
                    reported = offset
                    report(.accepted(offset: offset))
                case .paused?: report(.paused(byPeer: true))
                case .resumed?: report(.resumed(byPeer: true))
                case nil: break
                }
            case .channel(.binary): sender.receivedBytes()
            case .channel(.bufferedAmountLow): break
            case .channel(.closed):
                open = true  // to step to the end
                sender.channelClosed()
            case .pause:
                if let message = sender.pause() { channel.tell(message) }
            case .resume:
                if let message = sender.resume() { channel.tell(message) }
            case .cancel(let reason): sender.cancel(reason: reason)
            case .verdictWaitEnded: sender.verdictWaitEnded()
            }
            guard open else { continue }
            // Steps until the sender waits.
            while true {
                let step = sender.next(buffered: channel.bufferedAmount, highWater: Self.highWater)
                switch step {
                case .send(let message):
                    if !channel.tell(message) { sender.channelClosed() }
                    continue
                case .bytes(let position, let count):
                    if block.count != count { block = [UInt8](repeating: 0, count: count) }
                    let read = block.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(position)) }
                    guard read == count else {
                        sender.cancel(reason: "the sender cannot read its file at \(position)")
                        continue
                    }
                    do { try channel.send(block) } catch { sender.channelClosed() }
                    sender.sent(count)
                    if sender.allSent, verdictTimer == nil {
                        let wait = sender.verdictWait
                        verdictTimer = Task {
                            try? await Task.sleep(for: wait)
                            if !Task.isCancelled { sink.yield(.verdictWaitEnded) }
                        }
                    }
                    continue
                case .wait:
                    break
                case .finished(let outcome):
                    // The verdict means every byte arrived: say so before the end.
                    if outcome == .confirmed, reported != sender.size { report(.progress(sender.size)) }
                    return outcome
                }
                break
            }
            // What the peer has costs a wait on the SCTP queue: asked only when a report may be due.
            guard ContinuousClock.now - lastReport >= progressInterval || sender.allSent else { continue }
            let have = sender.position - min(UInt64(channel.unacknowledgedAmount), sender.position)
            if have != reported, ContinuousClock.now - lastReport >= progressInterval || have == sender.size {
                reported = have
                lastReport = .now
                report(.progress(have))
            }
        }
        return .interrupted(answered: sender.acceptedOffset != nil)
    }
}
