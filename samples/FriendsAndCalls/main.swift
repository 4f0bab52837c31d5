// Friends, messages with receipts and an answering bot, on a private network
// this program starts on 127.0.0.1 (a bootstrap node, Alice, and Bob the bot):
//
//   swift run friends-and-calls [RECORDING.webm]
//
// Bob accepts friend requests, answers every message, and answers every
// friend's call, recording it into one WebM. Alice befriends Bob, sends a
// message and waits for its delivery receipt and Bob's reply, then calls Bob
// for three seconds with media/tone.opus and media/testsrc.ivf. Each step
// prints a line; exit 0 if all worked.
import AsyncExtras
import CarrierNode
import CarrierSignaling
import Foundation
import RtcCalls
import RtcPeer

func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
func fail(_ text: String) -> Never {
    FileHandle.standardError.write(Data("error: \(text)\n".utf8))
    exit(1)
}

let root = NSTemporaryDirectory() + "friends-and-calls-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: root) }
let recording = CommandLine.arguments.dropFirst().first ?? root + "/bob-recording.webm"
let media = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("media").path

// The network: one bootstrap node on 127.0.0.1.
var bootstrapOptions = CarrierOptions()
bootstrapOptions.loopbackOnly = true
let bootstrap = try Carrier(options: bootstrapOptions)
try await bootstrap.start()
guard let entry = await bootstrap.bootstrapEntry() else { fail("the bootstrap node has no port") }

func node(_ name: String) throws -> Carrier {
    var options = CarrierOptions(dataDirectory: root + "/" + name, bootstrapNodes: [entry])
    options.loopbackOnly = true
    return try Carrier(options: options)
}
let alice = try node("alice")
let bob = try node("bob")
let bobEvents = await bob.events()
try await alice.start()
try await bob.start()
guard await alice.waitUntilReady(timeout: .seconds(60)), await bob.waitUntilReady(timeout: .seconds(60)) else {
    fail("did not join the network")
}
say("online: Alice \(alice.userId), Bob \(bob.userId)")

// Bob, the bot: friends in, answers to messages, and calls answered and recorded.
let bobCalls = CallClient(
    provider: try await CarrierSignalingProvider(carrier: bob),
    configuration: .init(peer: PeerConfiguration(localAddresses: ["127.0.0.1"])))
await bobCalls.start()
let callEvents = await bobCalls.events()
let (bobEnded, bobEndedSink) = AsyncStream<Void>.makeStream()
Task {
    for await event in bobEvents {
        switch event {
        case .friendRequest(let from, _, _, let hello):
            say("bob: friend request from \(from.description.prefix(8))…: \"\(hello)\", accepting")
            try? await bob.acceptFriend(from)
        case .message(let from, nil, let data, _, _):
            let text = String(decoding: data, as: UTF8.self)
            _ = try? await bob.deliverMessage(Array("you said: \(text)".utf8), to: from.description)
        default:
            break
        }
    }
}
Task {
    for await event in callEvents {
        if case .incoming(let call) = event {
            try? await bobCalls.accept(call.id, media: CallMedia(recordDirectory: recording))
        }
        if case .ended(let call) = event {
            // Reported after the call has closed, its recording included.
            say("bob: the call ended (\(call.endReason?.rawValue ?? "?"))")
            bobEndedSink.yield()
        }
    }
}

// Alice: befriend, message with a receipt, then a call.
let aliceEvents = await alice.events()
try await alice.addFriend(address: await bob.address().description, hello: "hi Bob, Alice here")
guard await alice.waitUntilConnected(to: bob.userId, timeout: .seconds(60)) else { fail("no friend link") }
say("alice: Bob is a friend and online")
let receipt = try await alice.deliverMessage(Array("hello".utf8), to: bob.userId.description)
say("alice: message delivered: \(receipt == .delivered)")
let reply = await aliceEvents.first(within: .seconds(30)) { event -> String? in
    if case .message(_, nil, let data, _, _) = event { return String(decoding: data, as: UTF8.self) }
    return nil
}
guard let reply else { fail("no reply from Bob") }
say("alice: Bob replied \"\(reply)\"")

let aliceCalls = CallClient(
    provider: try await CarrierSignalingProvider(carrier: alice),
    configuration: .init(peer: PeerConfiguration(localAddresses: ["127.0.0.1"])))
await aliceCalls.start()
let aliceCallEvents = await aliceCalls.events()
let call = try await aliceCalls.makeCall(
    to: bob.userId.description, options: [.audio, .video],
    media: CallMedia(audio: media + "/tone.opus", video: media + "/testsrc.ivf", loop: true))
let connected = await aliceCallEvents.first(within: .seconds(30)) { event -> Bool? in
    if case .stateChanged(let current) = event, current.state == .connected { return true }
    if case .ended = event { return false }
    return nil
}
guard connected == true else { fail("the call did not connect") }
say("alice: call connected; three seconds of media")
try await Task.sleep(for: .seconds(3))
try await aliceCalls.endCall(call.id)
_ = await aliceCallEvents.first(within: .seconds(10)) { if case .ended = $0 { true } else { nil } }
_ = await bobEnded.first(within: .seconds(10)) { _ in true }  // Bob's recording is closed
let size = (try? FileManager.default.attributesOfItem(atPath: recording)[.size] as? Int) ?? 0
say("bob recorded the call into \(recording) (\(size) bytes)")
await aliceCalls.stop()
await bobCalls.stop()
await alice.stop()
await bob.stop()
await bootstrap.stop()
guard receipt == .delivered, size > 10_000 else { fail("something did not arrive") }
say("done")
