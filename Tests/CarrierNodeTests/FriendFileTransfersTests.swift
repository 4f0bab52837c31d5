import FileSafety
import Foundation
import Testing

@testable import CarrierNode

/// The friend file transfers' state machine alone, on virtual time: what it
/// tells toxcore, the friend and the application for each event.
@Suite struct FriendFileTransfersTests {
    let start = ContinuousClock.now
    let friend: UserId
    let sha256 = [UInt8](repeating: 0xAB, count: 32)
    let slot = FileSlot(friend: 3, file: 7)

    init() throws {
        friend = try #require(UserId(publicKey: [UInt8](repeating: 1, count: 32)))
    }

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    func transfers() -> FriendFileTransfers {
        FriendFileTransfers(
            verdictTimeout: .seconds(60), progressInterval: .milliseconds(200), maxTransfers: 2,
            maxIncomingSize: 1 << 20, offerTimeout: .seconds(300))
    }

    /// The effects in words, to compare whole sequences.
    static func words(_ effects: [FriendFileTransfers.FileEffect]) -> [String] {
        effects.map { effect in
            switch effect {
            case .emit(let event):
                switch event {
                case .offered(let offer): "offered \(offer.name) \(offer.size)"
                case .accepted(_, let offset): "accepted at \(offset)"
                case .progress(_, let bytes, let total): "progress \(bytes)/\(total)"
                case .paused(_, let byPeer): "paused\(byPeer ? " by peer" : "")"
                case .resumed(_, let byPeer): "resumed\(byPeer ? " by peer" : "")"
                case .interrupted: "interrupted"
                case .finished(_, let outcome):
                    switch outcome {
                    case .completed(let path, let bytes): "completed \(bytes)\(path.map { " at \($0)" } ?? "")"
                    case .cancelled(let byPeer, let reason): "cancelled\(byPeer ? " by peer" : "") \(reason ?? "")"
                    case .failed(let why): "failed: \(why)"
                    }
                }
            case .control(let slot, let control): "control \(slot.file) \(control)"
            case .verdict(_, let verdict, let reason): "verdict \(verdict) \(reason ?? "")"
            case .verify: "verify"
            case .closeFile(let fd): "close \(fd)"
            case .discard(_, let keep): keep ? "keep partial" : "delete partial"
            case .refusedOffer(_, let reason): "refused offer: \(reason)"
            case .activity: "activity"
            }
        }
    }

    func outgoingKey() -> FileTransferKey { FileTransferKey(friend: friend, sha256: sha256, outgoing: true) }

    /// A file of 100 kB on fd 42, offered on `slot`.
    func offered() -> FriendFileTransfers {
        var files = transfers()
        #expect(files.add(OutgoingFile(key: outgoingKey(), name: "a.bin", size: 100_000, fd: 42)) == nil)
        let effects = files.offer(outgoingKey(), friendNumber: slot.friend) { _ in .sent(fileNumber: slot.file) }
        #expect(effects.isEmpty)
        return files
    }

    @Test func aSentFileGoesByChunksAndEndsWithTheReceiversVerdict() {
        var files = offered()
        let key = outgoingKey()
        #expect(files.statuses.first?.phase == .offered)
        #expect(Self.words(files.control(slot, .resume)) == ["accepted at 0"])
        _ = files.chunkRequested(slot, position: 0, length: 60_000, now: at(0))
        _ = files.chunkRequested(slot, position: 60_000, length: 40_000, now: at(0))
        #expect(files.filesWithRequests == [key])
        #expect(files.nextRequest(key)?.position == 0 && files.nextRequest(key)?.reader.fd == 42)
        files.chunkSent(key)
        #expect(Self.words(files.progress(key, now: at(0.1))) == ["progress 60000/100000"])
        files.chunkSent(key)
        #expect(files.progress(key, now: at(0.2)).isEmpty)  // not twice within 200 ms
        #expect(files.nextRequest(key) == nil)
        // toxcore's "all sent", then the verdict.
        #expect(
            Self.words(files.chunkRequested(slot, position: 0, length: 0, now: at(0.3))) == ["progress 100000/100000"])
        #expect(files.statuses.first?.phase == .verifying)
        let done = files.verdict(key, status: ExtraPacket.FileVerdict.completed.rawValue, reason: nil)
        #expect(Self.words(done) == ["close 42", "completed 100000"])
        #expect(files.statuses.isEmpty && !files.hasTraffic)
    }

    @Test func chunksGoFromInsideToxcoresCallbackUnlessEarlierOnesWait() {
        var files = offered()
        let key = outgoingKey()
        #expect(files.directChunkSources.mapValues(\.fd) == [slot: 42], "an offered file's chunks may go at once")
        _ = files.control(slot, .resume)
        #expect(
            Self.words(files.chunkSentDirectly(slot, position: 0, length: 1371, now: at(0))) == ["progress 1371/100000"]
        )
        #expect(files.chunkSentDirectly(slot, position: 1371, length: 1371, now: at(0.1)).isEmpty)
        #expect(files.statuses.first?.bytes == 2742)
        // toxcore's queue was full once: later chunks wait behind that one, in order.
        _ = files.chunkRequested(slot, position: 2742, length: 1371, now: at(0.1))
        #expect(files.directChunkSources.isEmpty)
        #expect(files.chunkSentDirectly(slot, position: 4113, length: 1371, now: at(0.3)).isEmpty)
        #expect(files.statuses.first?.bytes == 2742, "a chunk out of order is not counted")
        files.chunkSent(key)
        #expect(files.directChunkSources.mapValues(\.fd) == [slot: 42])
        // Paused by either side: toxcore asks for nothing, and nothing is sent.
        _ = files.pausedByUs(key, true)
        #expect(files.directChunkSources.isEmpty)
        _ = files.pausedByUs(key, false)
        _ = files.control(slot, .pause)
        #expect(files.directChunkSources.isEmpty)
    }

    @Test func aVerdictThatOvertakesAllSentStillReportsTheWholeFile() {
        var files = offered()
        _ = files.control(slot, .resume)
        let done = files.verdict(outgoingKey(), status: ExtraPacket.FileVerdict.completed.rawValue, reason: nil)
        #expect(Self.words(done) == ["progress 100000/100000", "close 42", "completed 100000"])
    }

    @Test func noVerdictWithinTheTimeoutFailsTheSender() {
        var files = offered()
        _ = files.chunkRequested(slot, position: 0, length: 0, now: at(1))
        #expect(files.expire(now: at(60.9)).isEmpty)
        #expect(Self.words(files.expire(now: at(61.1))).last?.hasPrefix("failed: no confirmation") == true)
    }

    @Test func aCancelFromThePeerWaitsForItsVerdictOnceAllWasSent() {
        var files = offered()
        _ = files.chunkRequested(slot, position: 0, length: 0, now: at(1))
        #expect(files.control(slot, .cancel).isEmpty)  // toxcore's slot is gone already
        let refused = files.verdict(outgoingKey(), status: ExtraPacket.FileVerdict.refused.rawValue, reason: "full")
        #expect(Self.words(refused) == ["close 42", "cancelled by peer full"])
    }

    @Test func aLinkDownInterruptsAndTheFileIsOfferedAgainOnANewSlot() {
        var files = offered()
        _ = files.control(slot, .resume)
        _ = files.chunkRequested(slot, position: 0, length: 1000, now: at(0))
        #expect(Self.words(files.linkDown(friend)) == ["interrupted"])
        #expect(files.nextRequest(outgoingKey()) == nil)  // what toxcore asked for went with it
        #expect(files.waiting(for: friend) == [outgoingKey()])
        #expect(files.control(slot, .resume).isEmpty)  // the old slot means nothing now
        _ = files.offer(outgoingKey(), friendNumber: 3) { _ in .sent(fileNumber: 9) }
        #expect(Self.words(files.control(FileSlot(friend: 3, file: 9), .resume)) == ["accepted at 0"])
    }

    @Test func toxcoresRefusalFailsTheFileButAFullTableWaits() {
        var files = offered()
        #expect(files.add(OutgoingFile(key: outgoingKey(), name: "a.bin", size: 1, fd: 43)) != nil)  // twice
        let other = FileTransferKey(friend: friend, sha256: [UInt8](repeating: 1, count: 32), outgoing: true)
        #expect(files.add(OutgoingFile(key: other, name: "b.bin", size: 1, fd: 44)) == nil)
        let third = FileTransferKey(friend: friend, sha256: [UInt8](repeating: 2, count: 32), outgoing: true)
        #expect(files.add(OutgoingFile(key: third, name: "c.bin", size: 1, fd: 45)) != nil)  // the limit is 2
        #expect(files.offer(other, friendNumber: 3) { _ in .tooMany }.isEmpty)
        #expect(files.waiting(for: friend) == [other])
        let failed = Self.words(files.offer(other, friendNumber: 3) { _ in .failed(code: 5) })
        #expect(failed == ["close 44", "failed: toxcore refused the file (tox_file_send error 5)"])
    }

    // MARK: Receiving

    func incomingKey() -> FileTransferKey { FileTransferKey(friend: friend, sha256: sha256, outgoing: false) }

    func partial(holding bytes: Int) throws -> (PartialFile, UInt64, String) {
        let directory = NSTemporaryDirectory() + "friend-files-\(UUID().uuidString)"
        let opened = try #require(PartialFile.open(directory: directory, key: incomingKey(), size: 100_000))
        if bytes > 0 { #expect(opened.0.write([UInt8](repeating: 7, count: bytes), at: 0)) }
        return (opened.0, UInt64(bytes), directory)
    }

    /// `a.bin`, 100 kB, offered on `slot`.
    func offeredIncoming() -> FriendFileTransfers {
        var files = transfers()
        _ = files.offered(
            slot, from: friend, kindIsData: true, size: 100_000, name: "a.bin", sha256: sha256, now: at(0)
        ) { _, _ in true }
        return files
    }

    /// Accepts the offered file into an empty partial file: it and its directory.
    func acceptEmpty(_ files: inout FriendFileTransfers) throws -> (PartialFile, String) {
        let (partial, _, directory) = try partial(holding: 0)
        _ = files.accepted(incomingKey(), into: directory, partial: partial, have: 0) { _, _ in true }
        return (partial, directory)
    }

    @Test func aReceivedFileResumesFromItsPartialAndIsVerifiedAtTheEnd() throws {
        var files = transfers()
        let offer = files.offered(
            slot, from: friend, kindIsData: true, size: 100_000, name: "a.bin", sha256: sha256, now: at(0)
        ) { _, _ in true }
        #expect(Self.words(offer) == ["offered a.bin 100000"])
        let (partial, have, directory) = try partial(holding: 1000)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var seeks: [UInt64] = []
        let accepted = files.accepted(incomingKey(), into: directory, partial: partial, have: have) {
            seeks.append($1)
            return true
        }
        #expect(Self.words(accepted) == ["control 7 resume", "accepted at 1000", "activity"])
        #expect(seeks == [1000])
        var written = 0
        let progress = files.chunk(slot, position: 1000, count: 99_000, now: at(1)) { _ in
            written += 1
            return true
        }
        #expect(written == 1 && Self.words(progress) == ["progress 100000/100000"])
        let end = files.chunk(slot, position: 0, count: 0, now: at(1.1)) { _ in true }
        #expect(Self.words(end) == ["progress 100000/100000", "verify"])
        let (mismatch, effects) = files.verified(incomingKey(), size: 100_000, sha256: [UInt8](repeating: 0, count: 32))
        #expect(mismatch == nil)
        #expect(Self.words(effects).first?.hasPrefix("verdict failed the file's SHA-256") == true)
        #expect(
            Self.words(effects).suffix(2) == [
                "delete partial", "failed: the file's SHA-256 does not match what the sender announced",
            ])
    }

    @Test func aVerifiedFileIsPlacedAndTheSenderToldBeforeTheEnd() throws {
        var files = offeredIncoming()
        let (partial, directory) = try acceptEmpty(&files)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = files.chunk(slot, position: 0, count: 0, now: at(1)) { _ in true }
        let (verified, effects) = files.verified(incomingKey(), size: 100_000, sha256: sha256)
        #expect(verified != nil && effects.isEmpty)
        let placed = files.placed(incomingKey(), at: directory + "/a.bin", failure: nil)
        #expect(Self.words(placed) == ["verdict completed ", "completed 100000 at \(directory)/a.bin"])
    }

    /// Chunks being received go to the partial file from inside toxcore's
    /// callback, a run of them as one event; the end, a chunk past the size
    /// or of another slot are left to the actor.
    @Test func receivedChunksAreWrittenInsideToxcoresCallback() throws {
        var files = offeredIncoming()
        #expect(files.directChunkSinks.isEmpty)  // offered, not accepted yet
        let (partial, directory) = try acceptEmpty(&files)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(files.directChunkSinks[slot]?.size == 100_000)

        let buffer = ToxEventBuffer()
        buffer.chunkSinks = files.directChunkSinks
        let bytes = (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        bytes.withUnsafeBufferPointer { chunk in
            #expect(buffer.writeChunk(slot, position: 0, data: chunk.baseAddress, length: 1371))
            #expect(buffer.writeChunk(slot, position: 1371, data: chunk.baseAddress! + 1371, length: 1371))
            #expect(!buffer.writeChunk(slot, position: 99_000, data: chunk.baseAddress, length: 1371))  // past the size
            #expect(!buffer.writeChunk(FileSlot(friend: 3, file: 8), position: 0, data: chunk.baseAddress, length: 10))
            #expect(!buffer.writeChunk(slot, position: 2742, data: chunk.baseAddress, length: 0))  // the end
        }
        let events = buffer.drain()
        #expect(events.count == 1)
        guard case .fileChunksWritten(slot, let end, true)? = events.first else {
            Issue.record("expected one run of written chunks, got \(events)")
            return
        }
        #expect(end == 2742)
        #expect(Self.words(files.chunksWritten(slot, end: end, written: true, now: at(1))) == ["progress 2742/100000"])
        #expect(partial.size == 2742)
        #expect(partial.sha256AsWritten(size: 2742) == Sha256.digest(Array(bytes.prefix(2742))))
    }

    @Test func aChunkTheDiskRefusedInsideTheCallbackFailsTheReceive() throws {
        var files = offeredIncoming()
        let (partial, directory) = try acceptEmpty(&files)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let failed = Self.words(files.chunksWritten(slot, end: 1371, written: false, now: at(1)))
        #expect(failed.first == "verdict failed cannot write the file")
        #expect(failed.suffix(2) == ["delete partial", "failed: cannot write the file"])
        #expect(files.directChunkSinks.isEmpty)
        #expect(files.chunksWritten(slot, end: 2742, written: true, now: at(1)).isEmpty)  // gone
    }

    @Test func aSenderThatCannotSeekStartsFromTheBeginning() throws {
        var files = transfers()
        _ = files.offered(slot, from: friend, kindIsData: true, size: 100_000, name: "a", sha256: sha256, now: at(0)) {
            _, _ in false
        }
        let (partial, have, directory) = try partial(holding: 5000)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let accepted = files.accepted(incomingKey(), into: directory, partial: partial, have: have) { _, _ in false }
        #expect(Self.words(accepted).contains("accepted at 0"))
        #expect(partial.size == 0)
    }

    @Test func anOfferTooLargeOrOfAnotherKindIsRefusedAtOnce() {
        var files = transfers()
        let large = files.offered(
            slot, from: friend, kindIsData: true, size: 2 << 20, name: "big", sha256: sha256, now: at(0)
        ) { _, _ in true }
        #expect(
            Self.words(large) == [
                "verdict refused the file is larger than 1048576 bytes", "control 7 cancel",
                "refused offer: the file is larger than 1048576 bytes",
            ])
        let avatar = files.offered(
            slot, from: friend, kindIsData: false, size: 10, name: "x", sha256: sha256, now: at(0)
        ) {
            _, _ in true
        }
        #expect(Self.words(avatar) == ["control 7 cancel"])
        #expect(files.statuses.isEmpty)
    }

    @Test func anOfferLeftUnansweredIsRefusedAfterTheTimeout() {
        var files = transfers()
        _ = files.offered(slot, from: friend, kindIsData: true, size: 10, name: "a", sha256: sha256, now: at(0)) {
            _, _ in true
        }
        #expect(files.expire(now: at(299)).isEmpty)
        let expired = Self.words(files.expire(now: at(301)))
        #expect(expired.first?.hasPrefix("verdict refused not answered within") == true)
        #expect(expired.dropFirst().first == "control 7 cancel")
        #expect(expired.last?.hasPrefix("cancelled not answered within") == true)
    }

    @Test func aCutReceiveIsInterruptedAndGoesOnWhenOfferedAgain() throws {
        var files = transfers()
        _ = files.offered(slot, from: friend, kindIsData: true, size: 100_000, name: "a", sha256: sha256, now: at(0)) {
            _, _ in true
        }
        let (partial, _, directory) = try partial(holding: 0)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = files.accepted(incomingKey(), into: directory, partial: partial, have: 0) { _, _ in true }
        _ = files.chunk(slot, position: 0, count: 2000, now: at(1)) { _ in true }
        #expect(Self.words(files.linkDown(friend)) == ["interrupted"])
        #expect(files.statuses.first?.phase == .interrupted)
        var seeks: [UInt64] = []
        let again = files.offered(
            FileSlot(friend: 3, file: 11), from: friend, kindIsData: true, size: 100_000, name: "a", sha256: sha256,
            now: at(30)
        ) {
            seeks.append($1)
            return true
        }
        #expect(Self.words(again) == ["control 11 resume", "accepted at 2000", "activity"])
        #expect(seeks == [2000])
        // Stopping keeps the partial for next time.
        #expect(Self.words(files.closeAll(reason: "stopped")) == ["keep partial", "failed: stopped"])
    }

    // MARK: Handing over to a session

    @Test func aReceiveHandedOverKeepsItsPartialAndEndsSilently() throws {
        var files = transfers()
        _ = files.offered(slot, from: friend, kindIsData: true, size: 100_000, name: "a", sha256: sha256, now: at(0)) {
            _, _ in true
        }
        // Not before the application accepted it: there is no directory to carry on in.
        let early = files.handOver(incomingKey())
        #expect(early == nil)
        let (partial, _, directory) = try partial(holding: 0)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = files.accepted(incomingKey(), into: directory, partial: partial, have: 0) { _, _ in true }
        _ = files.chunk(slot, position: 0, count: 2000, now: at(1)) { _ in true }
        let handedOver = files.handOver(incomingKey())
        let handed = try #require(handedOver)
        #expect(handed.0 == FileHandOver(bytes: 2000, directory: directory))
        #expect(Self.words(handed.1) == ["control 7 cancel", "keep partial"])
        #expect(files.statuses.isEmpty)
        // What toxcore still delivers on the old slot goes nowhere.
        let late = files.chunk(slot, position: 2000, count: 1000, now: at(2)) { _ in true }
        #expect(late.isEmpty)
    }

    @Test func aSenderHoldsAPeersCancelWhileItsSessionOffersToCarryOn() {
        var files = offered()
        let key = outgoingKey()
        _ = files.control(slot, .resume)
        let began = files.beginHandOver(key)
        #expect(began)
        let held = files.control(slot, .cancel)
        // The receiver gave toxcore's transfer up for the session: nothing yet.
        #expect(held.isEmpty)
        // It took the session's offer: toxcore's side closes its file, with no end of its own.
        let handed = files.handOver(key)
        #expect(handed?.0 == FileHandOver(bytes: 0, directory: nil))
        #expect(handed.map { Self.words($0.1) } == ["close 42"])
        #expect(files.statuses.isEmpty)
    }

    @Test func aSessionThatDidNotCarryOnLeavesToxcoresTransferOrItsCancel() {
        var files = offered()
        let key = outgoingKey()
        _ = files.control(slot, .resume)
        let first = files.beginHandOver(key)
        #expect(first)
        let refused = files.endHandOver(key)
        #expect(refused.isEmpty)  // refused: toxcore goes on
        #expect(files.statuses.first?.phase == .transferring)
        let second = files.beginHandOver(key)
        #expect(second)
        let cancel = files.control(slot, .cancel)
        #expect(cancel.isEmpty)
        // The session was refused after all: the friend's cancel was a cancel.
        let ended = files.endHandOver(key)
        #expect(Self.words(ended) == ["close 42", "cancelled by peer "])
        let again = files.beginHandOver(key)
        #expect(!again)
    }

    /// The friend's link dropped after the session's offer went out: the
    /// transfer waits for the friend, and the session that took it still ends
    /// it on toxcore (kept, it was offered again when the link came back).
    @Test func aSenderWaitingForTheFriendIsHandedOverToo() {
        var files = offered()
        let key = outgoingKey()
        _ = files.control(slot, .resume)
        let began = files.beginHandOver(key)
        #expect(began)
        _ = files.linkDown(friend)
        #expect(files.statuses.first?.phase == .waitingForFriend)
        let handed = files.handOver(key)
        #expect(handed.map { Self.words($0.1) } == ["close 42"])
        #expect(files.statuses.isEmpty)
    }
}
