import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// Files between friends over toxcore's file transfer, on the shared local network.
@Suite(.serialized, .timeLimit(.minutes(5))) struct FileTransferTests {
    @Test func aFileArrivesCheckedAndBothSidesEndOnce() async throws {
        let net = try await TestNetwork.shared()
        let (source, payload) = try makeFile(bytes: 2_000_000, name: "report.bin")
        let inbox = temporaryDirectory()
        let aliceEvents = await net.alice.events()
        let bobEvents = await net.bob.events()
        let sending = Task { await collect(aliceEvents) { $0.outgoing } }
        let receiving = Task { await collect(bobEvents, accept: net.bob, into: inbox) { !$0.outgoing } }

        let key = try await net.alice.sendFile(at: source, to: net.bob.userId)
        #expect(key.sha256 == sha256(payload))
        let received = await receiving.value
        let sent = await sending.value

        let offer = try #require(received.compactMap { if case .offered(let offer) = $0 { offer } else { nil } }.first)
        #expect(offer.name == "report.bin" && offer.size == 2_000_000)
        guard case .finished(_, .completed(let path?, 2_000_000))? = received.last else {
            Issue.record("receiver ended with \(String(describing: received.last))")
            return
        }
        #expect(path == inbox + "/report.bin")
        #expect(FileManager.default.contents(atPath: path) == Data(payload))
        #expect(sent.last == .finished(key, .completed(path: nil, bytes: 2_000_000)))
        #expect(sent.filter(\.isFinished).count == 1 && received.filter(\.isFinished).count == 1)
        #expect(sent.contains(.accepted(key, offset: 0)))
        // No partial file is left behind.
        #expect((try? FileManager.default.contentsOfDirectory(atPath: inbox + "/.carrier-partial")) ?? [] == [])
        #expect(await net.alice.fileTransfers().isEmpty)
        #expect(await net.bob.fileTransfers().isEmpty)
    }

    @Test func anExistingFileIsNeverOverwrittenAndNamesAreSanitised() async throws {
        let net = try await TestNetwork.shared()
        let inbox = temporaryDirectory()
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: inbox + "/notes.txt"))
        let (source, payload) = try makeFile(bytes: 3000, name: "whatever")
        let events = await net.carol.events()
        let receiving = Task { await collect(events, accept: net.carol, into: inbox) { !$0.outgoing } }
        _ = try await net.alice.sendFile(at: source, to: net.carol.userId, name: "../../notes.txt")
        let received = await receiving.value
        let offer = received.compactMap { if case .offered(let offer) = $0 { offer } else { nil } }.first
        #expect(offer?.name == "notes.txt")
        guard case .finished(_, .completed(let path?, _))? = received.last else {
            Issue.record("receiver ended with \(String(describing: received.last))")
            return
        }
        #expect(path == inbox + "/notes (1).txt")
        #expect(FileManager.default.contents(atPath: path) == Data(payload))
        #expect(FileManager.default.contents(atPath: inbox + "/notes.txt") == Data("keep me".utf8))
    }

    @Test func aRefusalReachesTheSenderWithItsReason() async throws {
        let net = try await TestNetwork.shared()
        let (source, _) = try makeFile(bytes: 10_000, name: "unwanted.bin")
        let aliceEvents = await net.alice.events()
        let bobEvents = await net.bob.events()
        let sending = Task { await collect(aliceEvents) { $0.outgoing } }
        let key = try await net.alice.sendFile(at: source, to: net.bob.userId)
        let incoming = FileTransferKey(friend: net.alice.userId, sha256: key.sha256, outgoing: false)
        let offered = await bobEvents.first(within: .seconds(30)) { event -> Bool? in
            if case .file(.offered(let offer)) = event, offer.key == incoming { return true }
            return nil
        }
        #expect(offered == true)
        try await net.bob.refuseFile(incoming, reason: "no room for it")
        let sent = await sending.value
        #expect(sent.last == .finished(key, .cancelled(byPeer: true, reason: "no room for it")))
    }

    @Test func eitherSideCancelsAndTheOtherIsTold() async throws {
        let net = try await TestNetwork.shared()
        for receiverCancels in [false, true] {
            let (source, _) = try makeFile(bytes: 8_000_000, name: "big-\(receiverCancels).bin")
            let inbox = temporaryDirectory()
            let aliceEvents = await net.alice.events()
            let bobEvents = await net.bob.events()
            let sending = Task { await collect(aliceEvents) { $0.outgoing } }
            let receiving = Task { await collect(bobEvents, accept: net.bob, into: inbox) { !$0.outgoing } }
            let key = try await net.alice.sendFile(at: source, to: net.bob.userId)
            let incoming = FileTransferKey(friend: net.alice.userId, sha256: key.sha256, outgoing: false)
            // Cancel once bytes are moving.
            let moving = await waitForProgress(net.bob, incoming)
            #expect(moving)
            if receiverCancels {
                try await net.bob.cancelFile(incoming)
            } else {
                try await net.alice.cancelFile(key)
            }
            let sent = await sending.value
            let received = await receiving.value
            #expect(sent.last == .finished(key, .cancelled(byPeer: receiverCancels, reason: nil)))
            #expect(received.last == .finished(incoming, .cancelled(byPeer: !receiverCancels, reason: nil)))
            #expect((try? FileManager.default.contentsOfDirectory(atPath: inbox + "/.carrier-partial")) ?? [] == [])
            #expect(!FileManager.default.fileExists(atPath: inbox + "/big-\(receiverCancels).bin"))
        }
    }

    @Test func pausedByTheReceiverAndResumed() async throws {
        let net = try await TestNetwork.shared()
        let (source, payload) = try makeFile(bytes: 6_000_000, name: "paused.bin")
        let inbox = temporaryDirectory()
        let aliceEvents = await net.alice.events()
        let bobEvents = await net.bob.events()
        let sending = Task { await collect(aliceEvents) { $0.outgoing } }
        let receiving = Task { await collect(bobEvents, accept: net.bob, into: inbox) { !$0.outgoing } }
        let key = try await net.alice.sendFile(at: source, to: net.bob.userId)
        let incoming = FileTransferKey(friend: net.alice.userId, sha256: key.sha256, outgoing: false)
        #expect(await waitForProgress(net.bob, incoming))
        try await net.bob.pauseFile(incoming)
        try await net.bob.resumeFile(incoming)
        let sent = await sending.value
        let received = await receiving.value
        #expect(sent.contains(.paused(key, byPeer: true)) && sent.contains(.resumed(key, byPeer: true)))
        #expect(received.contains(.paused(incoming, byPeer: false)))
        guard case .finished(_, .completed(let path?, _))? = received.last else {
            Issue.record("receiver ended with \(String(describing: received.last))")
            return
        }
        #expect(FileManager.default.contents(atPath: path) == Data(payload))
    }

    @Test func severalFilesAtOnceInBothDirections() async throws {
        let net = try await TestNetwork.shared()
        let aliceInbox = temporaryDirectory()
        let bobInbox = temporaryDirectory()
        let files = try (0..<3).map { try makeFile(bytes: 300_000 + $0, name: "many-\($0).bin") }
        let back = try (0..<2).map { try makeFile(bytes: 200_000 + $0, name: "back-\($0).bin") }
        let aliceEvents = await net.alice.events()
        let bobEvents = await net.bob.events()
        let aliceDone = Task { await collectAll(aliceEvents, count: 5, accept: net.alice, into: aliceInbox) }
        let bobDone = Task { await collectAll(bobEvents, count: 5, accept: net.bob, into: bobInbox) }
        for (path, _) in files { _ = try await net.alice.sendFile(at: path, to: net.bob.userId) }
        for (path, _) in back { _ = try await net.bob.sendFile(at: path, to: net.alice.userId) }
        let aliceOutcomes = await aliceDone.value
        let bobOutcomes = await bobDone.value
        #expect(aliceOutcomes.count == 5 && bobOutcomes.count == 5)
        #expect(aliceOutcomes.allSatisfy { if case .completed = $0 { true } else { false } })
        #expect(bobOutcomes.allSatisfy { if case .completed = $0 { true } else { false } })
        for (index, (_, payload)) in files.enumerated() {
            #expect(FileManager.default.contents(atPath: bobInbox + "/many-\(index).bin") == Data(payload))
        }
        for (index, (_, payload)) in back.enumerated() {
            #expect(FileManager.default.contents(atPath: aliceInbox + "/back-\(index).bin") == Data(payload))
        }
    }

    /// The receiver's process goes away mid-transfer and comes back on the same
    /// data directory: the sender offers the file again by itself, and the new
    /// process resumes from the bytes on disk.
    @Test func aTransferCutByARestartResumesFromTheBytesOnDisk() async throws {
        let net = try await TestNetwork.shared()
        let erin = try TestNetwork.peer("erin", root: net.root, entry: net.entry)
        try await erin.start()
        #expect(await erin.waitUntilReady(timeout: .seconds(60)))
        try await TestNetwork.befriend(net.alice, erin)
        let (source, payload) = try makeFile(bytes: 12_000_000, name: "resumed.bin")
        let inbox = temporaryDirectory()
        let aliceEvents = await net.alice.events()
        let sending = Task {
            await collect(aliceEvents, until: .seconds(240)) { $0.outgoing && $0.friend == erin.userId }
        }
        let firstEvents = await erin.events()
        let firstRun = Task { await collect(firstEvents, accept: erin, into: inbox) { !$0.outgoing } }
        let key = try await net.alice.sendFile(at: source, to: erin.userId)
        let incoming = FileTransferKey(friend: net.alice.userId, sha256: key.sha256, outgoing: false)
        #expect(await waitForProgress(erin, incoming, atLeast: 1_000_000))
        let oldPort = try #require(await erin.udpPort())
        await erin.stop()
        let cut = await firstRun.value
        #expect(cut.last == .finished(incoming, .failed("the node stopped")))

        let fresh = oldPort < 40000 ? UInt16(42000)...UInt16(42999) : UInt16(35000)...UInt16(35399)
        let again = try TestNetwork.peer("erin", root: net.root, entry: net.entry, ports: fresh)
        let secondEvents = await again.events()
        let secondRun = Task {
            await collect(secondEvents, until: .seconds(240), accept: again, into: inbox) { !$0.outgoing }
        }
        try await again.start()
        let resumed = await secondRun.value
        let sent = await sending.value
        // The file waited for a new link between loopback-only nodes: the
        // sender told the receiver where its node is (Carrier+DhtHint), which
        // answered, and each asked the other's node.
        let hints = (await net.alice.stats().dhtHints, await again.stats().dhtHints)
        await again.stop()
        #expect(hints.0 >= 1 && hints.1 >= 1, "DHT hints heard: alice \(hints.0), erin \(hints.1)")

        let offset = resumed.compactMap { if case .accepted(_, let offset) = $0 { offset } else { nil } }.first
        #expect((offset ?? 0) >= 1_000_000, "the second run started at \(String(describing: offset))")
        guard case .finished(_, .completed(let path?, _))? = resumed.last else {
            Issue.record("receiver ended with \(String(describing: resumed.last))")
            return
        }
        #expect(FileManager.default.contents(atPath: path) == Data(payload))
        #expect(sent.contains(.interrupted(key, reason: "the friend went offline")))
        #expect(sent.last == .finished(key, .completed(path: nil, bytes: 12_000_000)))
        #expect(sent.filter(\.isFinished).count == 1)
    }

    /// An application that never answers an offer does not hold its place forever.
    @Test func anOfferLeftUnansweredIsRefusedAfterTheTimeout() async throws {
        let net = try await TestNetwork.shared()
        var options = CarrierOptions(dataDirectory: net.root + "/gus", bootstrapNodes: [net.entry])
        options.loopbackOnly = true
        options.fileOfferTimeout = .seconds(1)
        let gus = try Carrier(options: options)
        try await gus.start()
        #expect(await gus.waitUntilReady(timeout: .seconds(60)))
        try await TestNetwork.befriend(net.alice, gus)
        let (source, _) = try makeFile(bytes: 5000, name: "ignored.bin")
        let aliceEvents = await net.alice.events()
        let sending = Task { await collect(aliceEvents) { $0.outgoing && $0.friend == gus.userId } }
        let key = try await net.alice.sendFile(at: source, to: gus.userId)
        let sent = await sending.value
        #expect(sent.last == .finished(key, .cancelled(byPeer: true, reason: "not answered within 1.0 seconds")))
        #expect(await gus.fileTransfers().isEmpty)
        await gus.stop()
    }

    /// The sender's process goes away mid-transfer; started again, it sends the
    /// same file once more and the receiver, which kept its bytes, carries on
    /// from them without asking its application again.
    @Test func aTransferCutByTheSendersRestartResumes() async throws {
        let net = try await TestNetwork.shared()
        let fred = try TestNetwork.peer("fred", root: net.root, entry: net.entry)
        try await fred.start()
        #expect(await fred.waitUntilReady(timeout: .seconds(60)))
        try await TestNetwork.befriend(fred, net.bob)
        let (source, payload) = try makeFile(bytes: 12_000_000, name: "from-fred.bin")
        let inbox = temporaryDirectory()
        let bobEvents = await net.bob.events()
        let receiving = Task {
            await collect(bobEvents, until: .seconds(240), accept: net.bob, into: inbox) { $0.friend == fred.userId }
        }
        let key = try await fred.sendFile(at: source, to: net.bob.userId)
        let incoming = FileTransferKey(friend: fred.userId, sha256: key.sha256, outgoing: false)
        #expect(await waitForProgress(net.bob, incoming, atLeast: 1_000_000))
        let oldPort = try #require(await fred.udpPort())
        await fred.stop()

        let fresh = oldPort < 40000 ? UInt16(46000)...UInt16(46999) : UInt16(35400)...UInt16(35799)
        let again = try TestNetwork.peer("fred", root: net.root, entry: net.entry, ports: fresh)
        try await again.start()
        #expect(await again.waitUntilConnected(to: net.bob.userId, timeout: .seconds(90)))
        #expect(try await again.sendFile(at: source, to: net.bob.userId) == key)
        let received = await receiving.value
        await again.stop()

        #expect(received.filter { if case .offered = $0 { true } else { false } }.count == 1)
        #expect(received.contains(.interrupted(incoming, reason: "the friend went offline")))
        let offsets = received.compactMap { if case .accepted(_, let offset) = $0 { offset } else { nil } }
        #expect(offsets.count == 2 && offsets[0] == 0 && offsets[1] >= 1_000_000, "accepted at \(offsets)")
        guard case .finished(_, .completed(let path?, _))? = received.last else {
            Issue.record("receiver ended with \(String(describing: received.last))")
            return
        }
        #expect(FileManager.default.contents(atPath: path) == Data(payload))
    }
}

// MARK: Helpers

extension FileTransferEvent {
    var isFinished: Bool { if case .finished = self { true } else { false } }
}

func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "carrier-files-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func makeFile(bytes: Int, name: String) throws -> (String, [UInt8]) {
    let payload = randomBytes(bytes)
    let path = temporaryDirectory() + "/" + name
    try Data(payload).write(to: URL(fileURLWithPath: path))
    return (path, payload)
}

private func sha256(_ bytes: [UInt8]) -> [UInt8] { NodeStore.sha256(bytes) }

/// The file events of the first transfer `matching` selects, up to and with its
/// `.finished`; offers are accepted into `directory` when `node` is given.
private func collect(
    _ events: AsyncStream<CarrierEvent>, until timeout: Duration = .seconds(120), accept node: Carrier? = nil,
    into directory: String = "", matching: @escaping @Sendable (FileTransferKey) -> Bool
) async -> [FileTransferEvent] {
    let box = EventLog()
    _ = await withTimeout(timeout) { () -> Bool? in
        var chosen: FileTransferKey?
        for await event in events {
            guard case .file(let fileEvent) = event, matching(fileEvent.key), chosen == nil || chosen == fileEvent.key
            else { continue }
            chosen = fileEvent.key
            box.append(fileEvent)
            if case .offered(let offer) = fileEvent, let node { try? await node.acceptFile(offer.key, into: directory) }
            if fileEvent.isFinished { return true }
        }
        return true
    }
    return box.events
}

/// Events seen so far, readable after a bounded wait gave up.
private final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [FileTransferEvent] = []
    func append(_ event: FileTransferEvent) { lock.withLock { seen.append(event) } }
    var events: [FileTransferEvent] { lock.withLock { seen } }
}

/// Accepts every offer and returns the outcomes of the first `count` transfers to finish.
private func collectAll(_ events: AsyncStream<CarrierEvent>, count: Int, accept node: Carrier, into directory: String)
    async -> [FileTransferOutcome]
{
    await withTimeout(.seconds(120)) { () -> [FileTransferOutcome]? in
        var outcomes: [FileTransferOutcome] = []
        for await event in events {
            guard case .file(let fileEvent) = event else { continue }
            if case .offered(let offer) = fileEvent { try? await node.acceptFile(offer.key, into: directory) }
            if case .finished(_, let outcome) = fileEvent {
                outcomes.append(outcome)
                if outcomes.count == count { break }
            }
        }
        return outcomes
    } ?? []
}

/// Waits (bounded) until `node` has received at least `bytes` of the transfer.
private func waitForProgress(_ node: Carrier, _ key: FileTransferKey, atLeast bytes: UInt64 = 1) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
        if let status = await node.fileTransfers().first(where: { $0.key == key }), status.bytes >= bytes {
            return true
        }
        try? await Task.sleep(for: .milliseconds(20))  // polling the node's state, bounded by the deadline
    }
    return false
}
