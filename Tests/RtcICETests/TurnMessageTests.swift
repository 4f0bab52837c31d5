import Testing

@testable import RtcICE

/// The TURN bridge's view of STUN and TURN messages, its framing and
/// retransmission, and which peers a TURN server is asked to reach.
@Suite struct TurnMessageTests {
    /// RFC 5769 §2.2, the sample IPv4 response: SOFTWARE, XOR-MAPPED-ADDRESS,
    /// MESSAGE-INTEGRITY, FINGERPRINT.
    static let rfc5769Response: [UInt8] = [
        0x01, 0x01, 0x00, 0x3C, 0x21, 0x12, 0xA4, 0x42, 0xB7, 0xE7, 0xA7, 0x01, 0xBC, 0x34, 0xD6, 0x86,
        0xFA, 0x87, 0xDF, 0xAE, 0x80, 0x22, 0x00, 0x0B, 0x74, 0x65, 0x73, 0x74, 0x20, 0x76, 0x65, 0x63,
        0x74, 0x6F, 0x72, 0x20, 0x00, 0x20, 0x00, 0x08, 0x00, 0x01, 0xA1, 0x47, 0xE1, 0x12, 0xA6, 0x43,
        0x00, 0x08, 0x00, 0x14, 0x2B, 0x91, 0xF5, 0x99, 0xFD, 0x9E, 0x90, 0xC3, 0x8C, 0x74, 0x89, 0xF9,
        0x2A, 0xF9, 0xBA, 0x53, 0xF0, 0x6B, 0xE7, 0xD7, 0x80, 0x28, 0x00, 0x04, 0xC0, 0x7D, 0x4C, 0x96,
    ]

    /// A request of `method` naming `peer` (IPv4) in XOR-PEER-ADDRESS.
    static func request(_ method: UInt16, peer: [UInt8], port: UInt16 = 5000) -> [UInt8] {
        let id: [UInt8] = Array(1...12)
        let type = (method & 0x000F) | ((method & 0x0070) << 1) | ((method & 0x0F80) << 2)
        let xorPort = port ^ 0x2112
        let value: [UInt8] =
            [0, 1, UInt8(xorPort >> 8), UInt8(xorPort & 0xFF)]
            + (0..<4).map { peer[$0] ^ TurnMessage.magicCookie[$0] }
        return [UInt8(type >> 8), UInt8(type & 0xFF), 0, 12] + TurnMessage.magicCookie + id
            + [0x00, 0x12, 0x00, 0x08] + value
    }

    /// An error response of `method` with `code`.
    static func error(_ method: UInt16, code: Int) -> [UInt8] {
        let type = ((method & 0x000F) | ((method & 0x0070) << 1) | ((method & 0x0F80) << 2)) | 0x0110
        return [UInt8(type >> 8), UInt8(type & 0xFF), 0, 8] + TurnMessage.magicCookie + Array(1...12)
            + [0x00, 0x09, 0x00, 0x04, 0, 0, UInt8(code / 100), UInt8(code % 100)]
    }

    @Test func readsTheRfc5769Response() throws {
        let message = try #require(TurnMessage(Self.rfc5769Response))
        #expect(message.method == 0x001 && message.messageClass == .success)
        #expect(message.attributes.map(\.type) == [0x8022, 0x0020, 0x0008, 0x8028])
        #expect(message.transactionId == Array(Self.rfc5769Response[8..<20]))
    }

    @Test func readsPeerAddressesAndErrorCodes() throws {
        let permission = try #require(TurnMessage(Self.request(TurnMessage.createPermission, peer: [198, 18, 2, 2])))
        #expect(permission.method == TurnMessage.createPermission && permission.messageClass == .request)
        #expect(permission.peerAddresses == [[198, 18, 2, 2]])
        #expect(TurnMessage(Self.error(TurnMessage.refresh, code: 437))?.errorNumber == 437)
        // An Allocate answer's relayed address: 203.0.113.1:40000, XORed with the cookie.
        let port = UInt16(40000) ^ 0x2112
        let relayed: [UInt8] =
            [0x01, 0x03, 0, 12] + TurnMessage.magicCookie + Array(1...12)
            + [0x00, 0x16, 0x00, 0x08, 0, 1, UInt8(port >> 8), UInt8(port & 0xFF)]
            + zip([203, 0, 113, 1] as [UInt8], TurnMessage.magicCookie).map { $0 ^ $1 }
        #expect(TurnMessage(relayed)?.relayedAddress == "203.0.113.1:40000")
    }

    @Test func refusesWhatIsNoWholeMessage() {
        #expect(TurnMessage([]) == nil)
        #expect(TurnMessage(Array(Self.rfc5769Response.dropLast())) == nil)
        var wrongLength = Self.rfc5769Response
        wrongLength[3] = 0xFF
        #expect(TurnMessage(wrongLength) == nil)
        // ChannelData is not STUN.
        #expect(TurnMessage([0x40, 0x00, 0x00, 0x04, 1, 2, 3, 4]) == nil)
        // An attribute that claims more than is there ends the list.
        var overrun = Self.request(TurnMessage.createPermission, peer: [203, 0, 113, 7])
        overrun[23] = 0xF0
        #expect(TurnMessage(overrun)?.peerAddresses == [])
    }

    @Test func framesOfATcpStream() {
        #expect(TurnMessage.frameLength([0x00, 0x01]) == nil)
        #expect(TurnMessage.frameLength(Self.rfc5769Response[...]) == Self.rfc5769Response.count)
        #expect(TurnMessage.frameLength([0x40, 0x00, 0x00, 0x05][...]) == 12)  // padded to 4 on TCP
        #expect(TurnMessage.frameLength([0x80, 0x00, 0x00, 0x05][...]) == 0)
    }

    @Test func theReaderCutsAStreamWhereverItWasSplit() {
        let channelData: [UInt8] = [0x40, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5, 0, 0, 0]
        let stream = Self.rfc5769Response + channelData + Self.rfc5769Response
        for split in [1, 3, 19, 20, 80, 81, 90, stream.count - 1] {
            var reader = TurnFrameReader()
            let frames = reader.read(stream[0..<split]) + reader.read(stream[split...])
            #expect(frames == [Self.rfc5769Response, channelData, Self.rfc5769Response], "split at \(split)")
        }
        // What is no frame passes through whole, and so does all after it.
        var reader = TurnFrameReader()
        #expect(reader.read([0xC0, 1, 2, 3, 4][...]) == [[0xC0, 1, 2, 3, 4]] && !reader.framed)
        #expect(reader.read([7, 8][...]) == [[7, 8]])
        // ChannelData: padded for TCP, unpadded for UDP.
        #expect(TurnFrameReader.unpadded(channelData) == Array(channelData.prefix(9)))
        #expect(TurnFrameReader.padded(Array(channelData.prefix(9))) == channelData)
        #expect(TurnFrameReader.padded(Self.rfc5769Response) == Self.rfc5769Response)
    }

    @Test func requestsAreSentAgainUntilAnsweredOrGivenUp() throws {
        var timer = TurnRequestTimer()
        let refresh = Self.request(TurnMessage.refresh, peer: [203, 0, 113, 9])
        let permission = Self.request(TurnMessage.createPermission, peer: [203, 0, 113, 9])
        timer.sent(refresh, at: 0)
        timer.sent([0x40, 0, 0, 0], at: 0)  // ChannelData: not timed
        #expect(timer.nextDeadline == 0.5)
        #expect(timer.due(at: 0.4).isEmpty)
        // RFC 8489: sends at 0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s, then given up.
        var sends = [0.0]
        var now = 0.0
        while let next = timer.nextDeadline, now < 100 {
            now = next
            if timer.due(at: now) == [refresh] { sends.append(now) }
        }
        #expect(sends == [0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5])
        #expect(timer.nextDeadline == nil)
        // An answer (same transaction id) ends the wait.
        timer.sent(permission, at: 0)
        var answer = Self.error(TurnMessage.createPermission, code: 403)
        answer.replaceSubrange(8..<20, with: permission[8..<20])
        timer.answered(answer)
        #expect(timer.nextDeadline == nil && timer.due(at: 10).isEmpty)
    }

    @Test func aPublicServerIsNotAskedForPrivatePeers() {
        let server: [UInt8] = [203, 0, 113, 1]
        let hidden = Self.request(TurnMessage.createPermission, peer: [198, 18, 2, 2])
        let reachable = Self.request(TurnMessage.createPermission, peer: [203, 0, 113, 12])
        #expect(!TurnPeerPolicy.forwards(hidden, server: server))
        #expect(!TurnPeerPolicy.forwards(Self.request(TurnMessage.channelBind, peer: [10, 1, 2, 3]), server: server))
        #expect(!TurnPeerPolicy.forwards(Self.request(TurnMessage.send, peer: [192, 168, 1, 9]), server: server))
        #expect(TurnPeerPolicy.forwards(reachable, server: server))
        #expect(TurnPeerPolicy.forwards(Self.request(TurnMessage.allocate, peer: [10, 0, 0, 1]), server: server))
        #expect(TurnPeerPolicy.forwards([0x40, 0x00, 0x00, 0x04, 1, 2, 3, 4], server: server))  // ChannelData
        // A server inside a private network or on loopback reaches its own.
        #expect(TurnPeerPolicy.forwards(hidden, server: [10, 0, 0, 5]))
        #expect(TurnPeerPolicy.forwards(hidden, server: [127, 0, 0, 1]))
    }

    @Test func privateAndPublicRanges() {
        for address: [UInt8] in [
            [10, 0, 0, 1], [172, 16, 0, 1], [172, 31, 255, 1], [192, 168, 0, 1], [100, 64, 0, 1], [127, 0, 0, 1],
            [169, 254, 1, 1], [198, 18, 1, 2], [198, 19, 0, 1], [224, 0, 0, 1], [0, 0, 0, 0],
        ] {
            #expect(!TurnPeerPolicy.isPublic(address), "\(address)")
        }
        for address: [UInt8] in [
            [8, 8, 8, 8], [172, 32, 0, 1], [100, 128, 0, 1], [203, 0, 113, 1], [198, 20, 0, 1],
        ] {
            #expect(TurnPeerPolicy.isPublic(address), "\(address)")
        }
        let uniqueLocal: [UInt8] = [0xFD] + Array(repeating: 1, count: 15)
        let global: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 12)
        let mappedPrivate: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF, 10, 0, 0, 1]
        #expect(!TurnPeerPolicy.isPublic(uniqueLocal) && TurnPeerPolicy.isPublic(global))
        #expect(!TurnPeerPolicy.isPublic(mappedPrivate))
    }

    @Test func aLostAllocationIsToldFromOtherErrors() {
        #expect(TurnPeerPolicy.meansAllocationLost(Self.error(TurnMessage.refresh, code: 437)))
        #expect(TurnPeerPolicy.meansAllocationLost(Self.error(TurnMessage.createPermission, code: 437)))
        // Stale nonce and new credentials: libnice asks again.
        #expect(!TurnPeerPolicy.meansAllocationLost(Self.error(TurnMessage.refresh, code: 438)))
        #expect(!TurnPeerPolicy.meansAllocationLost(Self.error(TurnMessage.refresh, code: 401)))
        // One peer refused: the allocation lives.
        #expect(!TurnPeerPolicy.meansAllocationLost(Self.error(TurnMessage.createPermission, code: 403)))
        #expect(!TurnPeerPolicy.meansAllocationLost(Self.error(TurnMessage.allocate, code: 437)))
    }
}
