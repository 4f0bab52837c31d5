import ExpressServer
import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// Offline delivery through an Express node that speaks Carrier's own API
/// (HTTPS, sealed bodies), as the Carrier network's public ones do: ours
/// serves it too, so two of our nodes told to use it that way
/// (`ExpressNode.api` `.carrier`, `--express-carrier`) leave each other a
/// message and a friend request there.
@Suite(.serialized, .timeLimit(.minutes(5))) struct CarrierExpressDeliveryTests {
    static func httpsEndpoint(_ root: String) async throws -> ExpressEndpoint {
        let pem = try await SelfSignedCertificate.make(in: root)
        let tls = HttpServer.Tls(certificate: pem.certificate, key: pem.key)
        return try ExpressEndpoint(configuration: ExpressService.Configuration(), tls: tls)
    }

    @Test func aMessageAndARequestWaitOnACarrierExpressNode() async throws {
        let net = try await TestNetwork.shared()
        let root = temporaryDirectory("carrier-express-delivery")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try await Self.httpsEndpoint(root)
        defer { server.stop() }
        var entry = server.entry
        entry.api = .carrier
        let (pair, recipient) = try await ExpressDeliveryTests.Pair.make(net, tag: "carrier-api", express: [entry])
        await pair.takeOffline(recipient)
        let receipt = try await pair.sender.deliverMessage(
            Array("left the Carrier way".utf8), to: pair.recipientId.description)
        #expect(receipt == .offline)

        // A stranger's request to the same, offline, address.
        let stranger = try ExpressDeliveryTests.Pair.node("stranger", root: root, entry: net.entry, express: [entry])
        try await stranger.start()
        #expect(await stranger.waitUntilReady(timeout: .seconds(60)))
        let address = await recipient.address()
        try await stranger.addFriend(address: address.description, hello: "found you on Carrier's Express")
        await stranger.stop()

        let again = try ExpressDeliveryTests.Pair.node(
            pair.recipientName, root: pair.root, entry: pair.entry, express: pair.express, ports: 43000...43999)
        let events = await again.events()
        let requests = await again.events()
        try await again.start()
        let senderId = pair.sender.userId
        let strangerId = stranger.userId
        async let hello = requests.first(within: .seconds(60)) { event -> String? in
            if case .friendRequest(strangerId, _, _, let hello) = event { return hello }
            return nil
        }
        let received = await ExpressDeliveryTests.offlineTexts(events, from: senderId, within: .seconds(60), until: 1)
        #expect(received.map(\.0) == ["left the Carrier way"])
        #expect(await hello == "found you on Carrier's Express")
        // Deleted on the node: a later pull brings nothing again.
        await again.requestPull()
        let more = await ExpressDeliveryTests.offlineTexts(events, from: senderId, within: .seconds(3), until: 1)
        #expect(more.isEmpty)
        await again.stop()
        await pair.sender.stop()
    }
}
