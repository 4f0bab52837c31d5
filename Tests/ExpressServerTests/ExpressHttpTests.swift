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
        befriend([alice, bob], on: server.service)
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
        befriend([alice, bob], on: server.service)
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
        let bob = TestUser()
        befriend([alice, bob], on: server.service)
        let id = randomId()
        try await client.deposit(alice.seal("second node", to: bob.id, id: id), to: bob.id, id: id)
    }

    /// A message to a recipient that has not registered the sender, a
    /// token shown by someone else, and a friend request that needs none.
    @Test func onlyRegisteredContactsLeaveMessagesAndAnyoneAFriendRequest() async throws {
        let server = try ExpressEndpoint(configuration: .init())
        defer { server.stop() }
        let (alice, bob, mallory) = (TestUser(), TestUser(), TestUser())
        let aliceClient = ExpressClient(nodes: [server.entry], userId: alice.id, secretKey: alice.secretKey)
        let malloryClient = ExpressClient(nodes: [server.entry], userId: mallory.id, secretKey: mallory.secretKey)
        let id = randomId()
        await #expect {
            try await aliceClient.deposit(alice.seal("before", to: bob.id, id: id), to: bob.id, id: id)
        } throws: { error in
            (error as? ExpressClient.Failure)?.status == 403
        }
        befriend([alice, bob], on: server.service)
        try await aliceClient.deposit(alice.seal("after", to: bob.id, id: id), to: bob.id, id: id)
        // Mallory shows Alice's token (it travelled in the clear): not registered for Mallory.
        let token = try #require(
            ExpressContact.token(secretKey: alice.secretKey, peer: bob.id, serverKey: server.service.publicKey))
        let forged = randomId()
        let answer = try await malloryClient.request(
            "POST", "/v1/messages/\(bob.id)/\(Hex.encode(forged))", body: mallory.seal("hi", to: bob.id),
            accept: [201, 403]
        ) { _ in [ExpressProtocol.Header.contact: Hex.encode(token)] }
        #expect(answer.status == 403)
        // A friend request needs no token, and one waits per sender.
        try await malloryClient.depositRequest(mallory.seal("let me in", to: bob.id), to: bob.id, id: randomId())
        await #expect {
            try await malloryClient.depositRequest(mallory.seal("again", to: bob.id), to: bob.id, id: randomId())
        } throws: { error in
            (error as? ExpressClient.Failure)?.status == 429
        }
        let records = try await ExpressClient(nodes: [server.entry], userId: bob.id, secretKey: bob.secretKey)
            .pull(after: 0, from: server.entry).records
        #expect(Set(records.map(\.sender)) == [alice.id, mallory.id] && records.count == 2)
    }
}
