import CarrierFiles
import CarrierWire
import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// Our node with a peer that does on the wire what the reference Carrier
/// library does (`BareCarrierPeer`: the framing, Carrier's packets as
/// friend messages, toxcore's receipts, nothing of ours), fed the reference
/// library's own bytes: the peer befriends our node, its profile, message and
/// call offer arrive as it meant them, and what our node sends back (a reply,
/// a long message, an invite) reads as Carrier's packets, with nothing of
/// ours that a Carrier peer would take for something else.
@Suite(.serialized, .timeLimit(.minutes(6))) struct CarrierPeerTests {
    /// The reference library's bytes (CarrierWireTests' packets.json).
    enum Reference {
        /// userinfo: Alice, "Carrier reference vector", +1-555-0100, female, alice@example.org, Loopback, avatar.
        static let userinfo = hex(
            "0400000052ffffff030100000400000070ffffff800000005c0000004c000000380000001c0000000800000001000000"
                + "080000004c6f6f706261636b0000000011000000616c696365406578616d706c652e6f72670000000b0000002b312d"
                + "3535352d30313030000600000066656d616c6500001800000043617272696572207265666572656e636520766563746f"
                + "720000000005000000416c69636500000012001d001c000400080010000c00140018000a000c00040005000800")
        /// friendreq: Alice, "Carrier reference vector", hello "hi".
        static let friendreq = hex(
            "04000000a6ffffff0602000004000000bcffffff34000000100000000400000002000000686900001800000043617272"
                + "696572207265666572656e636520766563746f720000000005000000416c6963650000000a001000040008000c000a"
                + "000c00040005000800")
        /// friendmsg: "hello-from-reference", no extension.
        static let friendmsg = hex(
            "04000000ccffffff2103000004000000e0ffffff040000001400000068656c6c6f2d66726f6d2d7265666572656e6365"
                + "08000800000004000a000c00040005000800")
        /// invitereq to ext "carrier", tid 3446792777: an RtcSignal offer and the NUL the bindings add.
        static let offerInvite = hex(
            "040000006affffff220400000400000084ffffff6c0000000000000049e271cd000000004d000000040000004d000000"
                + "7b2274797065223a226f66666572222c22736470223a22763d30222c2263616c6c4964223a2233663163396130652d"
                + "356432622d346331652d396637612d316232633364346535663630227d000000000700000063617272696572000e00"
                + "1c0004000c000000140018000a000c00040005000800")
        static let offerTid: Int64 = 3_446_792_777

        static func hex(_ text: String) -> [UInt8] {
            let digits = Array(text.utf8)
            return stride(from: 0, to: digits.count, by: 2).compactMap {
                UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)
            }
        }
    }

    @Test func aCarrierPeerBefriendsMessagesAndInvitesOurNode() async throws {
        let net = try await TestNetwork.shared()
        let root = temporaryDirectory("carrier-peer")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let node = try TestNetwork.peer("carrier-host", root: root, entry: net.entry)
        let events = await node.events()
        let signals = try await node.registerExtension("carrier")
        try await node.start()
        #expect(await node.waitUntilReady(timeout: .seconds(60)))
        let ourEntry = try #require(await node.bootstrapEntry())
        let peer = try BareCarrierPeer(bootstrap: net.entry, neighbours: [ourEntry], statusMessage: Reference.userinfo)
        let peerId = try #require(peer.userId)
        peer.start()
        defer { peer.stop() }

        #expect(await eventually(within: .seconds(90)) { peer.state.online }, "the peer did not join")
        // The request, with the reference's payload, reads as Alice's.
        try peer.addFriend(await node.address(), payload: Reference.friendreq)
        // A fresh toxcore's friend request goes by the onion, whose paths it builds first: on CI's
        // two busy cores that took 90 s and more. The test's time limit still bounds the whole.
        let request = await events.first(within: .seconds(180)) { event -> [String?]? in
            if case .friendRequest(peerId, let name, let description, let hello) = event {
                return [name, description, hello]
            }
            return nil
        }
        #expect(request == ["Alice", "Carrier reference vector", "hi"])
        try await node.acceptFriend(peerId)
        #expect(await eventually(within: .seconds(90)) { peer.state.friendConnected }, "no link to our node")
        #expect(await node.waitUntilConnected(to: peerId, timeout: .seconds(30)))
        // Its status message is its profile.
        #expect(
            await eventually(within: .seconds(10)) { await node.friendInfo(peerId)?.info.name == "Alice" })
        let info = await node.friendInfo(peerId)?.info
        #expect(info?.email == "alice@example.org" && info?.hasAvatar == true && info?.region == "Loopback")

        // A message, and a call offer on the carrier extension, in its bytes.
        try peer.send(Reference.friendmsg)
        try peer.send(Reference.offerInvite)
        let message = await events.first(within: .seconds(30)) { event -> [UInt8]? in
            if case .message(peerId, nil, let data, _, false) = event { return data }
            return nil
        }
        #expect(message == Array("hello-from-reference".utf8))
        let offer = try #require(
            await signals.first(within: .seconds(30)) { event -> IncomingInvite? in
                if case .inviteRequest(let invite) = event { return invite }
                return nil
            })
        #expect(offer.id == UInt64(bitPattern: Reference.offerTid) && offer.data.last == 0)
        #expect(String(decoding: offer.data.dropLast(), as: UTF8.self).hasPrefix(#"{"type":"offer""#))

        // Our reply is one invitersp for its tid, as iOS's bindings answer: "data".
        try await node.replyInvite(offer, status: 0, data: Array("data".utf8))
        // A long message goes as bulk fragments; the receipt is toxcore's.
        let long = (0..<2500).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(try await node.deliverMessage(long, to: peerId.description) == .delivered)
        #expect(await eventually(within: .seconds(30)) { peer.state.messages.count >= 4 })
        let packets = try peer.state.messages.map { try CarrierPacket.decode($0) }
        guard packets.count == 4, case .inviteResponse(let reply, 0, nil) = packets[0] else {
            Issue.record("not a reply and three fragments: \(packets)")
            return
        }
        #expect(reply.tid == Reference.offerTid && reply.ext == "carrier" && reply.data == Array("data".utf8))
        var joiner = CarrierReassembler<Int>()
        var whole: [UInt8]?
        for packet in packets.dropFirst() {
            guard case .bulk(let fragment) = packet else { continue }
            if case .whole(let joined) = joiner.take(fragment, kind: .bulk, from: 0, now: .now) { whole = joined.data }
        }
        #expect(whole == long)

        // An invite from us is not sent again to a peer that never said hello,
        // though no answer comes within the 4 s after which ours would repeat it.
        try await node.postInvite(Array("ping".utf8), to: peerId.description, timeout: .seconds(30)) { _ in }
        let invites: @Sendable () -> Int = {
            peer.state.messages.dropFirst(4).filter {
                if case .inviteRequest? = try? CarrierPacket.decode($0) { return true }
                return false
            }.count
        }
        #expect(await eventually(within: .seconds(10)) { invites() == 1 })
        // What is under test is an absence: 6 s, past the first resend at 4 s.
        #expect(await eventually(within: .seconds(6)) { invites() > 1 } == false)
        #expect(await node.stats().invitesResent == 0)
        // Our hello reached its toxcore, which has no handler for it: nothing answered.
        #expect(peer.state.customPackets.contains { $0.first == 160 && $0.dropFirst().first == 40 })

        // Files go as Beagle's file messages both ways: the peer is a Carrier peer.
        #expect(await node.speaksOurExtras(peerId) == false)
        var configuration = FriendFiles.Configuration(direct: false)
        configuration.messageFilesDirectory = root + "/in"
        let files = FriendFiles(node: node, sessions: nil, configuration: configuration)
        await files.start()
        let fileEvents = await files.events()
        let picture = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let packed = try #require(BeagleFileMessage(fileName: "../../photo.jpg", data: picture).encode())
        let fragments = try CarrierFragmenter.message(packed, ext: nil, tid: 77)
        for fragment in fragments { try peer.send(fragment.packet.encode()) }
        let saved = await fileEvents.first(within: .seconds(30)) { event -> String? in
            if event.path == .message, case .finished(_, .completed(let path?, _)) = event.event { return path }
            return nil
        }
        #expect(saved == root + "/in/photo.jpg", "a name of ours, in the folder: \(saved ?? "none")")
        #expect(FileManager.default.contents(atPath: saved ?? "").map(Array.init) == picture)

        let outgoing = root + "/report.pdf"
        let report = (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        try Data(report).write(to: URL(fileURLWithPath: outgoing))
        let before = peer.state.messages.count
        let key = try await files.send(at: outgoing, to: peerId)
        let sent = await fileEvents.first(within: .seconds(30)) { event -> Bool? in
            if event.event.key == key, case .finished(_, let outcome) = event.event {
                if case .completed = outcome { return true }
                return false
            }
            return nil
        }
        #expect(sent == true)
        var fileJoiner = CarrierReassembler<Int>()
        var fileMessage: [UInt8]?
        for bytes in peer.state.messages.dropFirst(before) {
            guard case .bulk(let fragment)? = try? CarrierPacket.decode(bytes) else { continue }
            if case .whole(let whole) = fileJoiner.take(fragment, kind: .bulk, from: 0, now: .now) {
                fileMessage = whole.data
            }
        }
        let received = try #require(fileMessage.flatMap(BeagleFileMessage.decode))
        #expect(received.fileName == "report.pdf" && received.data == report)
        await files.stop()
        await node.stop()
    }
}
