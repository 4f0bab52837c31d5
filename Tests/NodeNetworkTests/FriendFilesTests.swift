import AsyncExtras
import CarrierFiles
import CarrierSessions
import CarrierSignaling
import FileSafety
import Foundation
import RtcFileTransfer
import RtcPeer
import TestSupport
import Testing

@testable import CarrierNode

/// Files between friends on both paths with real toxcore nodes and real
/// sessions: a transfer cut over the session resumes over toxcore from the
/// bytes on disk, a partial file from either path is where a session resumes,
/// and a pause or a cancel on the direct path reaches the other side.
///
/// Nested in `FileTransferTests` so that it runs one test at a time with them:
/// both use Alice and Bob, and each checks that no other transfer is left.
extension FileTransferTests {
    @Suite(.timeLimit(.minutes(5))) struct BothPaths {
        /// Alice sends, Bob receives; both with sessions on 127.0.0.1.
        struct Pair {
            let alice: FriendFiles
            let bob: FriendFiles
            let aliceSessions: SessionManager
            let bobSessions: SessionManager

            static func make(_ net: TestNetwork, bobStall: Duration? = nil) async throws -> Pair {
                let peer = PeerConfiguration(localAddresses: ["127.0.0.1"])
                let aliceSessions = try await SessionManager.start(
                    on: net.alice, configuration: .init(peer: peer, acceptsSessions: false))
                var bobConfiguration = SessionManager.Configuration(peer: peer)
                bobConfiguration.applicationProtocols = [FriendFileMessage.protocolName]
                let bobSessions = try await SessionManager.start(on: net.bob, configuration: bobConfiguration)
                // Progress often enough to act on it (pause, cut) long before the end at 100+ MB/s.
                var files = FriendFiles.Configuration()
                files.progressInterval = .milliseconds(10)
                var bobFiles = files
                bobFiles.stallTimeout = bobStall
                let pair = Pair(
                    alice: FriendFiles(node: net.alice, sessions: aliceSessions, configuration: files),
                    bob: FriendFiles(node: net.bob, sessions: bobSessions, configuration: bobFiles),
                    aliceSessions: aliceSessions,
                    bobSessions: bobSessions)
                await pair.alice.start()
                await pair.bob.start()
                return pair
            }

            func stop() async {
                await alice.stop()
                await bob.stop()
                await aliceSessions.stop()
                await bobSessions.stop()
            }
        }

        @Test func aTransferCutOverTheSessionResumesOverToxcoreFromTheBytesOnDisk() async throws {
            let net = try await TestNetwork.shared()
            let pair = try await Pair.make(net)
            let (source, payload) = try makeFile(bytes: 48_000_000, name: "cut.bin")
            let inbox = temporaryDirectory()
            let aliceEvents = await pair.alice.events()
            let bobEvents = await pair.bob.events()
            let key = try await pair.alice.send(at: source, to: net.bob.userId)
            let incoming = FileTransferKey(friend: net.alice.userId, sha256: key.sha256, outgoing: false)

            // Bob takes it over the session, pauses it at its first progress, and then his sessions end.
            let cut = await next(bobEvents, within: .seconds(60)) { event -> Bool? in
                switch event.event {
                case .offered(let offer) where offer.key == incoming:
                    #expect(event.path == .direct)
                    try? await pair.bob.accept(incoming, into: inbox)
                case .progress(incoming, _, _) where event.path == .direct:
                    try? await pair.bob.pause(incoming)
                    return true
                default: break
                }
                return nil
            }
            #expect(cut == true)
            await pair.bobSessions.stop()

            // The rest comes over toxcore, from where the session stopped.
            let resumedAt = await next(bobEvents, within: .seconds(60)) { event -> UInt64? in
                switch event.event {
                case .offered(let offer) where offer.key == incoming:
                    try? await pair.bob.accept(incoming, into: inbox)
                case .accepted(incoming, let offset) where event.path == .toxcore:
                    return offset
                default: break
                }
                return nil
            }
            #expect((resumedAt ?? 0) > 0, "toxcore began at \(String(describing: resumedAt))")
            let received = await next(bobEvents, within: .seconds(120)) { event -> FileTransferOutcome? in
                if case .finished(incoming, let outcome) = event.event { return outcome }
                return nil
            }
            guard case .completed(let path?, 48_000_000)? = received else {
                Issue.record("Bob ended with \(String(describing: received))")
                return await pair.stop()
            }
            #expect(FileManager.default.contents(atPath: path) == Data(payload))
            let sent = await next(aliceEvents, within: .seconds(30)) { event -> FriendFileEvent? in
                if case .finished(key, _) = event.event { return event }
                return nil
            }
            #expect(sent == FriendFileEvent(.finished(key, .completed(path: nil, bytes: 48_000_000)), path: .toxcore))
            await pair.stop()
        }

        @Test func aRefusalOverTheSessionReachesTheSenderAtOnce() async throws {
            let net = try await TestNetwork.shared()
            let pair = try await Pair.make(net)
            let (source, _) = try makeFile(bytes: 100_000, name: "unwanted-direct.bin")
            let aliceEvents = await pair.alice.events()
            let bobEvents = await pair.bob.events()
            let key = try await pair.alice.send(at: source, to: net.bob.userId)
            let refused = await next(bobEvents, within: .seconds(60)) { event -> Bool? in
                guard case .offered(let offer) = event.event, offer.key.sha256 == key.sha256 else { return nil }
                try? await pair.bob.refuse(offer.key, reason: "no room for it")
                return event.path == .direct
            }
            #expect(refused == true)
            let end = await next(aliceEvents, within: .seconds(10)) { event -> FriendFileEvent? in
                if case .finished(key, _) = event.event { return event }
                return nil
            }
            #expect(
                end
                    == FriendFileEvent(
                        .finished(key, .cancelled(byPeer: true, reason: "no room for it")), path: .direct))
            await pair.stop()
        }

        @Test func severalFilesAtOnceShareOneSession() async throws {
            let net = try await TestNetwork.shared()
            let pair = try await Pair.make(net)
            let inbox = temporaryDirectory()
            let files = try (0..<3).map { try makeFile(bytes: 2_000_000 + $0, name: "many-\($0).bin") }
            let bobEvents = await pair.bob.events()
            let aliceEvents = await pair.alice.events()
            let bobTakes = Task {
                await next(bobEvents, within: .seconds(60)) { event -> [String]? in
                    if case .offered(let offer) = event.event { try? await pair.bob.accept(offer.key, into: inbox) }
                    guard case .finished = event.event else { return nil }
                    let names = (try? FileManager.default.contentsOfDirectory(atPath: inbox)) ?? []
                    let done = names.filter { $0.hasPrefix("many-") }.sorted()
                    return done.count == files.count ? done : nil
                }
            }
            // Alice's verdicts too: a stop before them would cut the sends short.
            let aliceEnds = Task {
                let ends = Locked<[FriendFileEvent]>([])
                return await next(aliceEvents, within: .seconds(60)) { event -> [FriendFileEvent]? in
                    guard case .finished = event.event else { return nil }
                    let all = ends.withLock {
                        $0.append(event)
                        return $0
                    }
                    return all.count == files.count ? all : nil
                }
            }
            var keys: [FileTransferKey] = []
            for (path, _) in files { keys.append(try await pair.alice.send(at: path, to: net.bob.userId)) }
            #expect(await bobTakes.value == ["many-0.bin", "many-1.bin", "many-2.bin"])
            let ends = await aliceEnds.value ?? []
            for (key, (_, payload)) in zip(keys, files) {
                let completed = FileTransferOutcome.completed(path: nil, bytes: UInt64(payload.count))
                #expect(ends.contains(FriendFileEvent(.finished(key, completed), path: .direct)), "\(ends)")
            }
            for (index, (_, payload)) in files.enumerated() {
                #expect(FileManager.default.contents(atPath: inbox + "/many-\(index).bin") == Data(payload))
            }
            #expect(await pair.aliceSessions.activeSessions.count == 1)
            await pair.stop()
        }

        @Test func aSessionResumesFromAPartialFileAndACancelReachesTheSender() async throws {
            let net = try await TestNetwork.shared()
            let pair = try await Pair.make(net)
            let (source, payload) = try makeFile(bytes: 3_000_000, name: "partial.bin")
            let inbox = temporaryDirectory()
            // What a transfer cut on toxcore leaves: the first 1.25 MB in Bob's partial file.
            let incoming = FileTransferKey(friend: net.alice.userId, sha256: Sha256.digest(payload), outgoing: false)
            let (partial, _) = try #require(PartialFile.open(directory: inbox, key: incoming, size: 3_000_000))
            #expect(partial.write(Array(payload.prefix(1_250_000)), at: 0))
            partial.close()

            let bobEvents = await pair.bob.events()
            let aliceEvents = await pair.alice.events()
            let key = try await pair.alice.send(at: source, to: net.bob.userId)
            let bobTakes = Task {
                await next(bobEvents, within: .seconds(60)) { event -> FileTransferOutcome? in
                    if case .offered(let offer) = event.event, offer.key == incoming {
                        try? await pair.bob.accept(offer.key, into: inbox)
                    }
                    if case .finished(incoming, let outcome) = event.event { return outcome }
                    return nil
                }
            }
            let accepted = await next(aliceEvents, within: .seconds(60)) { event -> FriendFileEvent? in
                if case .accepted(key, _) = event.event { return event }
                return nil
            }
            #expect(accepted == FriendFileEvent(.accepted(key, offset: 1_250_000), path: .direct))
            let outcome = await bobTakes.value
            #expect(outcome == .completed(path: inbox + "/partial.bin", bytes: 3_000_000))
            #expect(FileManager.default.contents(atPath: inbox + "/partial.bin") == Data(payload))

            // A second file, cancelled by the sender while Bob holds it paused: both end once, the partial is gone.
            let (other, _) = try makeFile(bytes: 48_000_000, name: "cancelled.bin")
            let secondKey = try await pair.alice.send(at: other, to: net.bob.userId)
            let secondIncoming = FileTransferKey(friend: net.alice.userId, sha256: secondKey.sha256, outgoing: false)
            let bobSide = Task {
                await ends(bobEvents, pair.bob, taking: secondIncoming, into: inbox, pausing: true)
            }
            let paused = await next(aliceEvents, within: .seconds(60)) { event -> Bool? in
                if case .paused(secondKey, byPeer: true) = event.event { return true }
                return nil
            }
            #expect(paused == true)
            try await pair.alice.cancel(secondKey)
            let senderEnd = await next(aliceEvents, within: .seconds(30)) { event -> FileTransferOutcome? in
                if case .finished(secondKey, let outcome) = event.event { return outcome }
                return nil
            }
            #expect(senderEnd == .cancelled(byPeer: false, reason: "cancelled by the sender"))
            let receiverEnd = await bobSide.value
            #expect(
                receiverEnd == .cancelled(byPeer: true, reason: "cancelled by the sender"),
                "\(String(describing: receiverEnd))")
            let partials = (try? FileManager.default.contentsOfDirectory(atPath: inbox + "/.carrier-partial")) ?? []
            #expect(partials.isEmpty, "left behind: \(partials)")
            await pair.stop()
        }

        /// A sender that pauses and never comes back holds its place on the
        /// receiver for the stall timeout only: the transfer ends there as
        /// stalled, the sender hears why, and the bytes stay for a resume.
        @Test func aStalledTransferOverASessionEndsAndKeepsItsBytes() async throws {
            let net = try await TestNetwork.shared()
            let pair = try await Pair.make(net, bobStall: .seconds(2))
            let (source, _) = try makeFile(bytes: 48_000_000, name: "stalled.bin")
            let inbox = temporaryDirectory()
            let bobEvents = await pair.bob.events()
            let aliceEvents = await pair.alice.events()
            let key = try await pair.alice.send(at: source, to: net.bob.userId)
            let incoming = FileTransferKey(friend: net.alice.userId, sha256: key.sha256, outgoing: false)
            let bobSide = Task { await ends(bobEvents, pair.bob, taking: incoming, into: inbox) }
            let senderEnd = await next(aliceEvents, within: .seconds(60)) { event -> FileTransferOutcome? in
                switch event.event {
                case .progress(key, _, _): try? await pair.alice.pause(key)
                case .finished(key, let outcome): return outcome
                default: break
                }
                return nil
            }
            let receiverEnd = await bobSide.value
            #expect(
                receiverEnd == .failed("stalled: nothing arrived for 2.0 seconds"), "\(String(describing: receiverEnd))"
            )
            #expect(
                senderEnd == .cancelled(byPeer: true, reason: "stalled: nothing arrived for 2.0 seconds"),
                "\(String(describing: senderEnd))")
            let partials = (try? FileManager.default.contentsOfDirectory(atPath: inbox + "/.carrier-partial")) ?? []
            #expect(partials.count == 1, "kept for a resume: \(partials)")
            await pair.stop()
        }

        /// A stop cuts a direct send short, and the file is not offered over
        /// toxcore behind the stopped sender's back.
        @Test func aStoppedSenderLeavesNothingToToxcore() async throws {
            let net = try await TestNetwork.shared()
            let pair = try await Pair.make(net)
            let (source, _) = try makeFile(bytes: 48_000_000, name: "stopped.bin")
            let inbox = temporaryDirectory()
            let bobEvents = await pair.bob.events()
            let key = try await pair.alice.send(at: source, to: net.bob.userId)
            let moving = await next(bobEvents, within: .seconds(60)) { event -> Bool? in
                switch event.event {
                case .offered(let offer): try? await pair.bob.accept(offer.key, into: inbox)
                case .progress(_, let bytes, _) where bytes > 0: return true
                default: break
                }
                return nil
            }
            #expect(moving == true)
            await pair.alice.stop()
            let left = await net.alice.fileTransfers().filter { $0.key == key }
            #expect(left.isEmpty, "\(left)")
            await pair.stop()
        }

        /// Toxcore carries a file because Bob's node takes no sessions yet; once
        /// it does, Alice's next try carries the transfer on over a session from
        /// the bytes on Bob's disk, and each side ends it once, on the direct path.
        @Test func aTransferOnToxcoreCarriesOnOverASessionThatComesUpLater() async throws {
            let net = try await TestNetwork.shared()
            let peer = PeerConfiguration(localAddresses: ["127.0.0.1"])
            let aliceSessions = try await SessionManager.start(
                on: net.alice, configuration: .init(peer: peer, acceptsSessions: false))
            var configuration = FriendFiles.Configuration(connectTimeout: .seconds(2))
            configuration.progressInterval = .milliseconds(10)
            configuration.handOverInterval = .milliseconds(200)
            configuration.handOverMinimum = 0
            let alice = FriendFiles(node: net.alice, sessions: aliceSessions, configuration: configuration)
            await alice.start()
            let bobOnToxcore = FriendFiles(node: net.bob, sessions: nil, configuration: configuration)
            await bobOnToxcore.start()
            let (source, payload) = try makeFile(bytes: 64_000_000, name: "carried-on.bin")
            let inbox = temporaryDirectory()
            let aliceEvents = await alice.events()
            let bobToxcoreEvents = await bobOnToxcore.events()
            let key = try await alice.send(at: source, to: net.bob.userId)
            let incoming = FileTransferKey(friend: net.alice.userId, sha256: key.sha256, outgoing: false)

            // Over toxcore first: Bob accepts, and once bytes arrive his node starts taking sessions.
            let moving = await next(bobToxcoreEvents, within: .seconds(60)) { event -> Bool? in
                switch event.event {
                case .offered(let offer) where offer.key == incoming:
                    #expect(event.path == .toxcore)
                    try? await bobOnToxcore.accept(incoming, into: inbox)
                case .progress(incoming, let bytes, _) where bytes > 0: return true
                default: break
                }
                return nil
            }
            #expect(moving == true)
            var bobConfiguration = SessionManager.Configuration(peer: peer)
            bobConfiguration.applicationProtocols = [FriendFileMessage.protocolName]
            let bobSessions = try await SessionManager.start(on: net.bob, configuration: bobConfiguration)
            let bob = FriendFiles(node: net.bob, sessions: bobSessions, configuration: configuration)
            await bob.start()
            let bobEvents = await bob.events()

            let bobSaw = await next(bobEvents, within: .seconds(60), collecting: incoming)
            let aliceSaw = await next(aliceEvents, within: .seconds(30), collecting: key)
            let bobAccepted = bobSaw.first { if case .accepted = $0.event { true } else { false } }
            guard case .accepted(_, let offset)? = bobAccepted?.event, bobAccepted?.path == .direct else {
                Issue.record("Bob: \(bobSaw)")
                return
            }
            #expect(offset > 0 && offset < 64_000_000, "carried on at \(offset)")
            #expect(
                bobSaw.contains(
                    FriendFileEvent(.interrupted(incoming, reason: "going on over a direct session"), path: .toxcore)))
            #expect(
                bobSaw.last
                    == FriendFileEvent(
                        .finished(incoming, .completed(path: inbox + "/carried-on.bin", bytes: 64_000_000)),
                        path: .direct))
            #expect(FileManager.default.contents(atPath: inbox + "/carried-on.bin") == Data(payload))
            #expect(aliceSaw.contains(FriendFileEvent(.accepted(key, offset: offset), path: .direct)), "\(aliceSaw)")
            #expect(
                aliceSaw.last
                    == FriendFileEvent(.finished(key, .completed(path: nil, bytes: 64_000_000)), path: .direct))
            #expect(aliceSaw.filter { if case .finished = $0.event { true } else { false } }.count == 1)
            let aliceLeft = await net.alice.fileTransfers()
            let bobLeft = await net.bob.fileTransfers()
            #expect(aliceLeft.isEmpty, "\(aliceLeft)")
            #expect(bobLeft.isEmpty, "\(bobLeft)")
            let partials = (try? FileManager.default.contentsOfDirectory(atPath: inbox + "/.carrier-partial")) ?? []
            #expect(partials.isEmpty, "left behind: \(partials)")
            await alice.stop()
            await bob.stop()
            await bobOnToxcore.stop()
            await aliceSessions.stop()
            await bobSessions.stop()
        }
    }
}

/// Every event about `key` up to and including its `.finished`, within `timeout`.
private func next(
    _ events: AsyncStream<FriendFileEvent>, within timeout: Duration, collecting key: FileTransferKey
) async -> [FriendFileEvent] {
    let seen = Locked<[FriendFileEvent]>([])
    _ = await next(events, within: timeout) { event -> Bool? in
        guard event.event.key == key else { return nil }
        seen.withLock { $0.append(event) }
        if case .finished = event.event { return true }
        return nil
    }
    return seen.withLock { $0 }
}

/// How a receiver's transfer of `incoming` ends (within 60 s): `files`
/// accepts it into `inbox` when it is offered and, `pausing`, pauses it at
/// each progress.
private func ends(
    _ events: AsyncStream<FriendFileEvent>, _ files: FriendFiles, taking incoming: FileTransferKey,
    into inbox: String, pausing: Bool = false
) async -> FileTransferOutcome? {
    await next(events, within: .seconds(60)) { event -> FileTransferOutcome? in
        switch event.event {
        case .offered(let offer) where offer.key == incoming: try? await files.accept(offer.key, into: inbox)
        case .progress(incoming, _, _) where pausing: try? await files.pause(incoming)
        case .finished(incoming, let outcome): return outcome
        default: break
        }
        return nil
    }
}

/// The first non-nil answer of `body` for the next events, within `timeout`
/// (`body` may act: accept an offer, pause).
private func next<T: Sendable>(
    _ events: AsyncStream<FriendFileEvent>, within timeout: Duration,
    _ body: @escaping @Sendable (FriendFileEvent) async -> T?
) async -> T? {
    await withTimeout(timeout) { () -> T? in
        for await event in events {
            if let answer = await body(event) { return answer }
        }
        return nil
    }
}
