// Files between friends and offline messages through Express, on a private
// network that this program starts on 127.0.0.1 (a bootstrap node, an Express
// node, Alice and Bob):
//
//   swift run offline-and-files
//
// Alice sends Bob a file (Bob accepts it into a folder; size and SHA-256 are
// checked), Bob goes offline, Alice's message waits on Express sealed for
// Bob, Bob comes back and gets it. Each step prints a line; exit 0 if all worked.
import AsyncExtras
import CarrierNode
import ExpressServer
import Foundation

func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
func fail(_ text: String) -> Never {
    FileHandle.standardError.write(Data("error: \(text)\n".utf8))
    exit(1)
}

let root = NSTemporaryDirectory() + "offline-and-files-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: root) }

// A bootstrap node and an Express node (in memory), both on 127.0.0.1.
var bootstrapOptions = CarrierOptions()
bootstrapOptions.loopbackOnly = true
let bootstrap = try Carrier(options: bootstrapOptions)
try await bootstrap.start()
guard let entry = await bootstrap.bootstrapEntry() else { fail("the bootstrap node has no port") }
let express = try ExpressEndpoint(configuration: .init())
say("network: bootstrap \(entry), Express \(express.entry)")

func peer(_ name: String) throws -> Carrier {
    var options = CarrierOptions(dataDirectory: root + "/" + name, bootstrapNodes: [entry])
    options.loopbackOnly = true
    options.expressNodes = [express.entry]
    return try Carrier(options: options)
}

let alice = try peer("alice")
var bob = try peer("bob")
try await alice.start()
try await bob.start()
guard await alice.waitUntilReady(timeout: .seconds(60)), await bob.waitUntilReady(timeout: .seconds(60)) else {
    fail("did not join the network")
}

// Befriend: Alice asks, Bob accepts.
let bobEvents = await bob.events()
try await alice.addFriend(address: await bob.address().description, hello: "hi Bob")
let aliceId = alice.userId
guard
    await bobEvents.first(within: .seconds(60), { if case .friendRequest(aliceId, _, _, _) = $0 { true } else { nil } })
        != nil
else { fail("no friend request") }
try await bob.acceptFriend(aliceId)
guard await alice.waitUntilConnected(to: bob.userId, timeout: .seconds(60)) else { fail("no friend link") }
say("friends: Alice and Bob")

// A file: Alice offers it, Bob accepts into his inbox when the offer comes.
try FileManager.default.createDirectory(atPath: root + "/outbox", withIntermediateDirectories: true)
try Data((0..<500_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(
    to: URL(fileURLWithPath: root + "/outbox/notes.bin"))
let key = try await alice.sendFile(at: root + "/outbox/notes.bin", to: bob.userId)
let stored = await bobEvents.first(within: .seconds(60)) { event -> String? in
    guard case .file(let fileEvent) = event, fileEvent.key.sha256 == key.sha256 else { return nil }
    switch fileEvent {
    case .offered(let offer):
        Task { try? await bob.acceptFile(offer.key, into: root + "/inbox") }
    case .finished(_, .completed(let path?, _)):
        return path
    case .finished(_, let outcome):
        fail("the file ended \(outcome)")
    default:
        break
    }
    return nil
}
guard let stored else { fail("the file did not arrive") }
say("file: \(stored), SHA-256 \(key.sha256Hex.prefix(16))… checked by Bob")

// An offline message: Bob goes away, Alice writes, Bob comes back.
let bobId = bob.userId
let aliceEvents = await alice.events()
await bob.stop()
_ = await aliceEvents.first(within: .seconds(60)) { if case .friendConnection(bobId, false) = $0 { true } else { nil } }
let receipt = try await alice.deliverMessage(Array("see you later".utf8), to: bobId.description)
guard receipt == .offline else { fail("the message was not stored offline: \(receipt)") }
say("offline: Bob is away, the message waits on Express (receipt \(receipt))")
bob = try peer("bob")
let backEvents = await bob.events()
try await bob.start()
let text = await backEvents.first(within: .seconds(90)) { event -> String? in
    if case .message(aliceId, nil, let data, _, true) = event { return String(decoding: data, as: UTF8.self) }
    return nil
}
guard text == "see you later" else { fail("Bob did not get the offline message") }
say("offline: Bob came back and got \"see you later\"")

for node in [alice, bob, bootstrap] { await node.stop() }
express.stop()
say("done")
