import Foundation
import Testing

@testable import CarrierNode
@testable import ExpressServer

/// The node's Express client against a real Express node over HTTP on 127.0.0.1.
@Suite struct ExpressHttpTests {
    @Test func clientAndServerOverHttp() async throws {
        let server = try ExpressEndpoint(configuration: .init())
        defer { server.stop() }
        let alice = TestUser()
        let bob = TestUser()
        let aliceClient = ExpressClient(nodes: [server.entry], userId: alice.id, secretKey: alice.secretKey)
        let bobClient = ExpressClient(nodes: [server.entry], userId: bob.id, secretKey: bob.secretKey)
        let id = randomId()
        try await aliceClient.deposit(alice.seal("over http", to: bob.id, id: id), to: bob.id, id: id)
        let (records, more) = try await bobClient.pull(after: 0, from: server.entry)
        #expect(records.count == 1 && !more)
        let opened = records.first.flatMap {
            SealedMessage.open($0.sealed, from: $0.sender, recipientSecretKey: bob.secretKey)
        }
        #expect(opened?.data == Array("over http".utf8) && opened?.id == id)
        try await bobClient.delete(through: records[0].seq, on: server.entry)
        #expect(try await bobClient.pull(after: 0, from: server.entry).records.isEmpty)
    }

    @Test func aClientTrustsOnlyTheKeyItWasGiven() async throws {
        let server = try ExpressEndpoint(configuration: .init())
        defer { server.stop() }
        let bob = TestUser()
        var impostor = server.entry
        impostor.publicKey = TestUser().id.publicKey
        let client = ExpressClient(nodes: [impostor], userId: bob.id, secretKey: bob.secretKey)
        await #expect {
            try await client.pull(after: 0, from: impostor)
        } throws: { error in
            "\(error)".contains("not signed by the Express node's key")
        }
    }

    @Test func anOversizeBodyIsRefusedWith413AndTheServerGoesOn() async throws {
        let server = try ExpressEndpoint(configuration: .init())
        defer { server.stop() }
        let alice = TestUser()
        let bob = TestUser()
        let client = ExpressClient(nodes: [server.entry], userId: alice.id, secretKey: alice.secretKey)
        let huge = [UInt8](repeating: 1, count: ExpressProtocol.maxBodySize + 10)
        await #expect {
            try await client.deposit(huge, to: bob.id, id: randomId())
        } throws: { error in
            (error as? ExpressClient.Failure)?.status == 413
        }
        let id = randomId()
        try await client.deposit(alice.seal("still fine", to: bob.id, id: id), to: bob.id, id: id)
    }

    @Test func anUnreachableNodeIsSkippedForTheNext() async throws {
        let server = try ExpressEndpoint(configuration: .init())
        defer { server.stop() }
        let alice = TestUser()
        var dead = server.entry
        dead.port = 1
        let client = ExpressClient(nodes: [dead, server.entry], userId: alice.id, secretKey: alice.secretKey)
        let id = randomId()
        try await client.deposit(alice.seal("second node", to: TestUser().id, id: id), to: TestUser().id, id: id)
    }
}
