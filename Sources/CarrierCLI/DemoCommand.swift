import AsyncExtras
import CarrierNode
import ExpressServer
import FileSafety
import Foundation

/// The node part of the demo: everything on 127.0.0.1 in one process.
struct DemoCommand: Command {
    static let name = "demo"
    static let summary = "the whole story on 127.0.0.1: a network, two friends, messages, a call with media and a file"
    static let help = """
        Usage: carrier demo [--record DIR] [--call-seconds S] [--json]

        Starts a bootstrap node and two peers (Alice and Bob) on 127.0.0.1 in one
        process, befriends them, sends a message and a 1 MB bulk message with
        receipts and a 4 MB file (toxcore's file transfer, checked by Bob); Bob
        goes offline, Alice's message waits on an Express node (sealed for Bob),
        Bob comes back and receives it; then Alice calls Bob: the media/ files flow both ways (Alice
        sends WAV and Y4M, encoded to Opus and VP8; Bob sends Ogg Opus and IVF as
        they are), Alice sends an 8 MB file over the data channel, both record, and
        the recordings are checked against their sources. Prints each step with its
        time; with --json the last line is a JSON summary.

          --record DIR       where the recordings go (default: a new folder under /tmp, kept)
          --call-seconds S   how long the call carries media (default 4)

        Node data directories are removed at the end; the recordings are kept.
        Exit 0 only if every step succeeded.
        """
    static let valued: Set<String> = ["--record", "--call-seconds"]

    struct Step {
        /// camelCase key of the step's time in the JSON summary, e.g. `joinMs`.
        var key: String
        var name: String
        var ms: Double
        var detail: String
    }

    /// A new private folder with an unpredictable name (not one made from the pid).
    static func temporaryDirectory(_ prefix: String) throws -> String {
        guard let made = PrivateFiles.makeTemporaryDirectory(prefix: prefix) else {
            throw CarrierError.storage("cannot make a temporary folder: \(String(cString: strerror(errno)))")
        }
        return made
    }

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        _ = try arguments.positionals(0...0, usage: "carrier demo [--record DIR] [--call-seconds S] [--json]")
        let callSeconds = try arguments.seconds("--call-seconds", default: 4).milliseconds / 1000
        let output = global.output
        let root = try Self.temporaryDirectory("carrier-demo")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let recordings = try arguments.value("--record") ?? Self.temporaryDirectory("carrier-demo-recordings")
        if case .failure(let failure) = PrivateFiles.makeDirectory(recordings) { throw failure }
        var steps: [Step] = []
        func record(_ key: String, _ name: String, since start: ContinuousClock.Instant, _ detail: String) {
            let step = Step(
                key: key, name: name, ms: rounded((ContinuousClock.now - start).milliseconds), detail: detail)
            steps.append(step)
            if !output.json {
                let time = String(format: "%9.1f ms", step.ms)
                output.line(step.name.padding(toLength: 20, withPad: " ", startingAt: 0) + time + "  " + step.detail)
            }
        }

        var started = ContinuousClock.now
        guard let port = PortProbe.freePort() else { throw CarrierError.invalidArgument("no free port on 127.0.0.1") }
        var bootstrapOptions = CarrierOptions()
        bootstrapOptions.loopbackOnly = true
        bootstrapOptions.udpPorts = port...port
        bootstrapOptions.tcpRelayPort = port
        let bootstrap = try Carrier(options: bootstrapOptions)
        try await bootstrap.start()
        let entry = BootstrapNode(host: "127.0.0.1", port: port, publicKey: await bootstrap.dhtKey())
        record("bootstrapMs", "bootstrap node", since: started, entry.description)

        started = ContinuousClock.now
        // Inside the private folder (removed with it).
        let express = try ExpressEndpoint(configuration: .init(databasePath: root + "/express.db"))
        defer { express.stop() }
        record("expressMs", "Express node", since: started, express.entry.description)

        func peer(_ name: String) throws -> Carrier {
            var options = CarrierOptions(dataDirectory: root + "/" + name, bootstrapNodes: [entry])
            options.loopbackOnly = true
            options.expressNodes = [express.entry]
            return try Carrier(options: options)
        }
        let alice = try peer("alice")
        var bob = try peer("bob")
        var nodes = [bootstrap, alice, bob]
        do {
            var summary = try await story(alice: alice, bob: bob, record: record, started: &started)
            bob = try await DemoOffline.story(alice: alice, bob: bob, comeBack: { try peer("bob") }, record: record)
            nodes.append(bob)
            summary.merge(
                try await DemoCall.story(
                    alice: alice, bob: bob, recordings: recordings, seconds: callSeconds, record: record)
            ) { $1 }
            for node in nodes { await node.stop() }
            if output.json {
                var json: [String: any Sendable] = ["ok": true, "bootstrap": entry.description]
                for step in steps { json[step.key] = step.ms }
                json.merge(summary) { $1 }
                output.line(Output.encode(json))
            } else {
                output.line("all steps passed; recordings in \(recordings)")
            }
            return 0
        } catch {
            for node in nodes { await node.stop() }
            output.log("demo failed: \(error)")
            if output.json { output.line(Output.encode(["ok": false, "error": "\(error)"])) }
            return 1
        }
    }

    /// A 4 MB file from Alice to Bob over the node (toxcore's file transfer),
    /// accepted into a folder and checked there; returns MB/s.
    private static func sendFile(
        alice: Carrier, bob: Carrier, events: AsyncStream<CarrierEvent>,
        record: (String, String, ContinuousClock.Instant, String) -> Void
    ) async throws -> Double {
        let folder = try Self.temporaryDirectory("carrier-demo-files")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/inbox", withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(4 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try Data(bytes).write(to: URL(fileURLWithPath: folder + "/holiday.bin"))
        let started = ContinuousClock.now
        let key = try await alice.sendFile(at: folder + "/holiday.bin", to: bob.userId)
        let outcome = await events.first(within: .seconds(60)) { event -> FileTransferOutcome? in
            guard case .file(let fileEvent) = event, fileEvent.key.sha256 == key.sha256 else { return nil }
            switch fileEvent {
            case .offered(let offer):
                Task { try? await bob.acceptFile(offer.key, into: folder + "/inbox") }
                return nil
            case .finished(_, let outcome): return outcome
            default: return nil
            }
        }
        guard case .completed(let path?, _)? = outcome, FileManager.default.contents(atPath: path) == Data(bytes) else {
            throw CarrierError.invalidArgument("the file to Bob did not arrive intact: \(String(describing: outcome))")
        }
        let rate = rounded(Double(bytes.count) / 1e6 / max((ContinuousClock.now - started).inSeconds, 0.000_001))
        record("fileToFriendMs", "4 MB file to friend", started, "SHA-256 checked by Bob, \(rate) MB/s")
        return rate
    }

    /// Join, befriend, message, bulk message; each step bounded in time.
    private static func story(
        alice: Carrier, bob: Carrier, record: (String, String, ContinuousClock.Instant, String) -> Void,
        started: inout ContinuousClock.Instant
    ) async throws -> [String: any Sendable] {
        started = ContinuousClock.now
        try await alice.start()
        try await bob.start()
        for node in [alice, bob] where await !node.waitUntilReady(timeout: .seconds(60)) {
            throw CarrierError.timedOut("joining the local network")
        }
        record(
            "joinMs", "joined network", started,
            "Alice \(alice.userId.description.prefix(8))…, Bob \(bob.userId.description.prefix(8))…")

        started = ContinuousClock.now
        let bobEvents = await bob.events()
        try await alice.addFriend(address: await bob.address().description, hello: "hi Bob, it's Alice")
        let aliceId = alice.userId
        let hello = await bobEvents.first(within: .seconds(60)) { event -> String? in
            if case .friendRequest(aliceId, _, _, let hello) = event { return hello }
            return nil
        }
        guard let hello else { throw CarrierError.timedOut("the friend request") }
        try await bob.acceptFriend(aliceId)
        guard await alice.waitUntilConnected(to: bob.userId, timeout: .seconds(60)),
            await bob.waitUntilConnected(to: aliceId, timeout: .seconds(60))
        else { throw CarrierError.timedOut("the friend connection") }
        record("friendMs", "friends connected", started, "request \"\(hello)\" accepted")

        started = ContinuousClock.now
        let text = Array("hello Bob".utf8)
        guard try await alice.deliverMessage(text, to: bob.userId.description) == .delivered else {
            throw CarrierError.invalidArgument("the message was not delivered")
        }
        record("messageMs", "message delivered", started, "\"hello Bob\" with receipt")

        started = ContinuousClock.now
        let direct = await alice.waitUntilLinked(to: bob.userId, over: .udp, timeout: .seconds(30))
        record(
            "directLinkMs", "direct link", started,
            direct ? "UDP (was relayed over TCP)" : "still relayed over TCP after 30 s")

        started = ContinuousClock.now
        var generator = SystemRandomNumberGenerator()
        let bulk = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        async let arrived = bobEvents.first(within: .seconds(60)) { event -> [UInt8]? in
            if case .message(aliceId, nil, let data, _, _) = event, data.count == bulk.count { return data }
            return nil
        }
        let receipt = try await alice.deliverMessage(bulk, to: bob.userId.description)
        let received = await arrived
        guard receipt == .delivered, received == bulk else {
            throw CarrierError.invalidArgument("the 1 MB message did not arrive intact (receipt \(receipt))")
        }
        let seconds = (ContinuousClock.now - started).milliseconds / 1000
        let rate = rounded(1.048576 / max(seconds, 0.000_001))
        record("bulkMs", "1 MB bulk delivered", started, "identical bytes, \(rate) MB/s")

        let fileRate = try await sendFile(alice: alice, bob: bob, events: bobEvents, record: record)
        return [
            "fileToFriendMBps": fileRate, "bulkMBps": rate, "directLink": direct, "aliceUserId": aliceId.description,
            "bobUserId": bob.userId.description,
        ]
    }
}
