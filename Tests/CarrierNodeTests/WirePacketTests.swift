import Testing

@testable import CarrierNode

@Suite struct WirePacketTests {
    @Test func everyPacketRoundTrips() throws {
        var info = UserInfo()
        info.name = "Bob"
        info.description = "a bot"
        info.hasAvatar = true
        info.client = .init(protoVersion: 2, platform: "linux", osVersion: "debian 12", appVersion: "0.1")
        info.profile = .init(avatarUrl: "https://example.com/a.png", url: "", ens: "bob.eth", extra: "{}")
        let fragment = WirePacket.Fragment(
            ext: "carrier", transferId: 0xDEAD_BEEF_0102, offset: 1280, total: 4000, data: [1, 2, 3])
        let packets: [WirePacket] = [
            .userInfo(info),
            .friendRequest(.init(name: "Alice", description: nil, hello: "hi, it's me")),
            .message(ext: nil, data: Array("hello".utf8), messageId: 9),
            .message(ext: "carrier", data: [], messageId: nil),
            .receipt(messageId: 77, status: 0, reason: nil),
            .receipt(messageId: 78, status: 1, reason: "no extension x"),
            .inviteRequest(fragment),
            .inviteResponse(fragment, status: -3, reason: "declined"),
            .inviteResponse(
                WirePacket.Fragment(ext: nil, transferId: 1, offset: 0, total: 0, data: []), status: 0, reason: nil),
            .bulk(fragment),
            .bulk(WirePacket.Fragment(ext: nil, transferId: 5, offset: 0, total: 9, data: [1], messageId: 12)),
            .fileResult(sha256: [UInt8](repeating: 3, count: 32), status: 2, reason: "the SHA-256 differs"),
            .dhtNode(key: [UInt8](repeating: 7, count: 32), port: 33445),
        ]
        for packet in packets {
            #expect(try WirePacket.decode(packet.encode()) == packet)
        }
    }

    @Test func knownBytesOfAMessage() {
        // type 33, then ext "x" (tag 1, len 1) and data "hi" (tag 2, len 2).
        let bytes = WirePacket.message(ext: "x", data: [0x68, 0x69], messageId: nil).encode()
        #expect(bytes == [33, 1, 0, 1, 0x78, 2, 0, 2, 0x68, 0x69])
    }

    @Test func aFullFragmentFitsInOneToxMessage() {
        let ext = String(repeating: "e", count: WirePacket.maxExtensionNameLength)
        let data = [UInt8](repeating: 7, count: WirePacket.fragmentDataSize)
        let fragment = WirePacket.Fragment(
            ext: ext, transferId: .max, offset: .max, total: .max, data: data, messageId: .max)
        let reason = String(repeating: "r", count: 10)
        #expect(WirePacket.inviteRequest(fragment).encode().count <= WirePacket.maxMessageSize)
        #expect(WirePacket.bulk(fragment).encode().count <= WirePacket.maxMessageSize)
        #expect(
            WirePacket.inviteResponse(fragment, status: 1, reason: reason).encode().count <= WirePacket.maxMessageSize)
    }

    @Test func malformedInputIsATypedError() {
        #expect(throws: PacketError.empty) { try WirePacket.decode([]) }
        #expect(throws: PacketError.unknownType(99)) { try WirePacket.decode([99]) }
        #expect(throws: PacketError.truncated) { try WirePacket.decode([33, 2, 0]) }
        #expect(throws: PacketError.truncated) { try WirePacket.decode([33, 2, 0, 9, 1]) }
        #expect(throws: PacketError.missingField(2)) { try WirePacket.decode([33]) }
        #expect(throws: PacketError.duplicateField(2)) { try WirePacket.decode([33, 2, 0, 0, 2, 0, 0]) }
        #expect(throws: PacketError.badField(3)) {
            try WirePacket.decode([36, 3, 0, 1, 9, 4, 0, 4, 0, 0, 0, 0, 5, 0, 4, 0, 0, 0, 1])
        }
        #expect(throws: PacketError.badField(1)) { try WirePacket.decode([33, 1, 0, 1, 0x3A, 2, 0, 0]) }
        #expect(throws: PacketError.badField(1)) { try WirePacket.decode([33, 1, 0, 2, 0xC3, 0x28, 2, 0, 0]) }
        #expect(throws: PacketError.tooLarge(1373)) { try WirePacket.decode([UInt8](repeating: 33, count: 1373)) }
    }

    @Test func aDhtHintNeedsAWholeKeyAndAPort() {
        // type 39, key (tag 60) and port (tag 61, two bytes, big-endian).
        let key = [UInt8](repeating: 7, count: 32)
        #expect(
            WirePacket.dhtNode(key: key, port: 0x8235).encode() == [39, 60, 0, 32] + key + [61, 0, 2, 0x82, 0x35])
        #expect(throws: PacketError.badField(60)) {
            try WirePacket.decode([39, 60, 0, 31] + key.dropLast() + [61, 0, 2, 1, 1])
        }
        #expect(throws: PacketError.badField(61)) { try WirePacket.decode([39, 60, 0, 32] + key + [61, 0, 2, 0, 0]) }
        #expect(throws: PacketError.missingField(61)) { try WirePacket.decode([39, 60, 0, 32] + key) }
    }

    @Test func unknownFieldsAreSkipped() throws {
        let bytes: [UInt8] = [33, 99, 0, 2, 1, 1, 2, 0, 1, 0x41]
        #expect(try WirePacket.decode(bytes) == .message(ext: nil, data: [0x41], messageId: nil))
    }

    @Test func userInfoLimitsAreEnforced() {
        var info = UserInfo()
        info.name = String(repeating: "n", count: 64)
        #expect(throws: CarrierError.self) { try info.validate() }
        info.name = "ok"
        #expect(throws: Never.self) { try info.validate() }
    }
}

@Suite struct FragmentAssemblerTests {
    typealias Assembler = FragmentAssembler<Int>
    let start = ContinuousClock.now

    func fragments(_ size: Int, id: UInt64 = 7) -> [WirePacket.Fragment] {
        WirePacket.Fragment.split((0..<size).map { UInt8($0 & 0xFF) }, ext: nil, transferId: id)
    }

    @Test func reassemblesInOrder() {
        var assembler = Assembler(limits: .init(maxTotal: 5 << 20))
        let pieces = fragments(5000)
        #expect(pieces.count == 4)
        for piece in pieces.dropLast() { #expect(assembler.add(piece, from: 1, now: start) == .incomplete) }
        #expect(assembler.add(pieces.last!, from: 1, now: start) == .complete((0..<5000).map { UInt8($0 & 0xFF) }))
        #expect(assembler.isEmpty)
    }

    @Test func aSingleFragmentCompletesAtOnce() {
        var assembler = Assembler(limits: .init(maxTotal: 8192))
        #expect(assembler.add(fragments(10)[0], from: 1, now: start) == .complete((0..<10).map { UInt8($0) }))
    }

    @Test func aLostPieceDropsTheTransfer() {
        var assembler = Assembler(limits: .init(maxTotal: 5 << 20))
        let pieces = fragments(4000)
        #expect(assembler.add(pieces[0], from: 1, now: start) == .incomplete)
        #expect(assembler.add(pieces[2], from: 1, now: start) == .rejected(.missingFragment))
        #expect(assembler.isEmpty)
        // The rest of that transfer is discarded quietly: one report per lost message.
        #expect(assembler.add(pieces[3], from: 1, now: start) == .discarded)
    }

    @Test func anOversizeClaimIsRefusedBeforeAnyBuffering() {
        var assembler = Assembler(limits: .init(maxTotal: 8192))
        let claim = WirePacket.Fragment(ext: nil, transferId: 1, offset: 0, total: 8193, data: [1])
        #expect(assembler.add(claim, from: 1, now: start) == .rejected(.oversizeClaim(8193)))
        let zero = WirePacket.Fragment(ext: nil, transferId: 2, offset: 0, total: 0, data: [])
        #expect(assembler.add(zero, from: 1, now: start) == .rejected(.oversizeClaim(0)))
        #expect(assembler.isEmpty)
    }

    @Test func overflowAndInconsistentTotalsAreRejected() {
        var assembler = Assembler(limits: .init(maxTotal: 8192))
        func first(_ id: UInt64) -> WirePacket.Fragment {
            WirePacket.Fragment(ext: nil, transferId: id, offset: 0, total: 10, data: [1, 2, 3, 4, 5, 6])
        }
        #expect(assembler.add(first(1), from: 1, now: start) == .incomplete)
        let tooMuch = WirePacket.Fragment(ext: nil, transferId: 1, offset: 6, total: 10, data: [1, 2, 3, 4, 5])
        #expect(assembler.add(tooMuch, from: 1, now: start) == .rejected(.overflow))
        #expect(assembler.add(first(2), from: 1, now: start) == .incomplete)
        let otherTotal = WirePacket.Fragment(ext: nil, transferId: 2, offset: 6, total: 11, data: [1])
        #expect(assembler.add(otherTotal, from: 1, now: start) == .rejected(.inconsistentTotal))
        var longFirst = first(3)
        longFirst.data = [UInt8](repeating: 0, count: 11)
        #expect(assembler.add(longFirst, from: 1, now: start) == .rejected(.overflow))
        #expect(assembler.isEmpty)
    }

    @Test func fragmentsOfARejectedTransferAreDiscardedQuietly() {
        var assembler = Assembler(limits: .init(maxTotal: 8192))
        let pieces = fragments(4000, id: 9)
        #expect(assembler.add(pieces[1], from: 1, now: start) == .rejected(.missingFragment))
        #expect(assembler.add(pieces[2], from: 1, now: start) == .discarded)
        #expect(assembler.add(pieces[3], from: 1, now: start) == .discarded)
        // The same id from another peer is another transfer.
        #expect(assembler.add(pieces[0], from: 2, now: start) == .incomplete)
    }

    @Test func incompleteTransfersExpire() {
        var assembler = Assembler(limits: .init(maxTotal: 8192, timeout: .seconds(60)))
        #expect(assembler.add(fragments(3000)[0], from: 1, now: start) == .incomplete)
        #expect(assembler.expire(now: start + .seconds(59)).isEmpty)
        #expect(assembler.expire(now: start + .seconds(61)).count == 1)
        #expect(assembler.isEmpty)
    }

    @Test func concurrentTransfersAndBufferedBytesAreBounded() {
        var assembler = Assembler(limits: .init(maxTotal: 1 << 20, maxTransfersPerPeer: 2, maxBufferedBytes: 3000))
        #expect(assembler.add(fragments(3000, id: 1)[0], from: 1, now: start) == .incomplete)
        #expect(assembler.add(fragments(3000, id: 2)[0], from: 1, now: start) == .incomplete)
        #expect(assembler.add(fragments(3000, id: 3)[0], from: 1, now: start) == .rejected(.tooManyTransfers))
        #expect(assembler.add(fragments(3000, id: 4)[0], from: 2, now: start) == .rejected(.bufferFull))
        assembler.removeAll(from: 1)
        #expect(assembler.add(fragments(3000, id: 5)[0], from: 2, now: start) == .incomplete)
    }

    @Test func transfersFromDifferentPeersDoNotMix() {
        var assembler = Assembler(limits: .init(maxTotal: 8192))
        let a = fragments(2000, id: 5)
        #expect(assembler.add(a[0], from: 1, now: start) == .incomplete)
        #expect(assembler.add(a[1], from: 2, now: start) == .rejected(.missingFragment))
        #expect(assembler.add(a[1], from: 1, now: start) == .complete((0..<2000).map { UInt8($0 & 0xFF) }))
    }
}
