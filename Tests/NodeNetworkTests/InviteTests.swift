import Foundation
import TestSupport
import Testing

@testable import CarrierNode

@Suite(.timeLimit(.minutes(5))) struct InviteTests {
    @Test func inviteIsAnsweredWithAReply() async throws {
        let net = try await TestNetwork.shared()
        let inbox = await net.bob.events()
        let token = UUID().uuidString
        let aliceId = net.alice.userId
        let bob = net.bob
        let answering = Task {
            let invite = await inbox.first(within: .seconds(30)) { event -> IncomingInvite? in
                if case .inviteRequest(let invite) = event, invite.from == aliceId, invite.data == Array(token.utf8) {
                    return invite
                }
                return nil
            }
            guard let invite else { return false }
            try await bob.replyInvite(invite, status: 0, data: Array("pong \(token)".utf8))
            // Each invite takes exactly one reply.
            await #expect(throws: CarrierError.noSuchInvite) { try await bob.replyInvite(invite, status: 0, data: [1]) }
            return true
        }
        let reply = try await net.alice.sendInvite(Array(token.utf8), to: net.bob.userId.description)
        #expect(try await answering.value)
        #expect(reply == InviteReply(status: 0, data: Array("pong \(token)".utf8)))
    }

    @Test func largeInviteAndLargeReplyAreReassembled() async throws {
        let net = try await TestNetwork.shared()
        let inbox = await net.bob.events()
        let request = randomBytes(Carrier.maxInviteSize)
        let response = randomBytes(Carrier.maxInviteSize)
        let bob = net.bob
        let answering = Task {
            let invite = await inbox.first(within: .seconds(30)) { event -> IncomingInvite? in
                if case .inviteRequest(let invite) = event, invite.data == request { return invite }
                return nil
            }
            guard let invite else { return false }
            try await bob.replyInvite(invite, status: 0, data: response)
            return true
        }
        let reply = try await net.alice.sendInvite(request, to: net.bob.userId.description)
        #expect(try await answering.value)
        #expect(reply.status == 0 && reply.data == response)
    }

    @Test func refusalCarriesStatusAndReason() async throws {
        let net = try await TestNetwork.shared()
        let inbox = await net.carol.events()
        let bytes = Array("refuse me \(UUID())".utf8)
        let carol = net.carol
        let answering = Task {
            guard
                let invite = await inbox.first(
                    within: .seconds(30),
                    { event -> IncomingInvite? in
                        if case .inviteRequest(let invite) = event, invite.data == bytes { return invite }
                        return nil
                    })
            else { return }
            try await carol.replyInvite(invite, status: 7, reason: "busy")
        }
        let reply = try await net.alice.sendInvite(bytes, to: net.carol.userId.description)
        try await answering.value
        #expect(reply == InviteReply(status: 7, reason: "busy"))
    }

    /// An invite lost on the way (a connection that died under it) is sent
    /// again when no reply has come, and answered.
    @Test func aLostInviteIsSentAgainAndAnswered() async throws {
        let net = try await TestNetwork.shared()
        let inbox = await net.bob.events()
        let bytes = Array("lost once \(UUID())".utf8)
        let bob = net.bob
        await bob.loseNextInvite(carrying: bytes)
        let before = await net.alice.stats().invitesResent
        let answering = Task {
            let invite = await inbox.first(within: .seconds(30)) { event -> IncomingInvite? in
                if case .inviteRequest(let invite) = event, invite.data == bytes { return invite }
                return nil
            }
            guard let invite else { return false }
            try await bob.replyInvite(invite, status: 0, data: [42])
            return true
        }
        let reply = try await net.alice.sendInvite(bytes, to: net.bob.userId.description, timeout: .seconds(30))
        #expect(try await answering.value)
        #expect(reply == InviteReply(status: 0, data: [42]))
        #expect(await net.alice.stats().invitesResent > before)
    }

    /// A reply lost on the way: the sender asks again, the receiver answers
    /// again from what it sent, and its app sees the invite once.
    @Test func aLostReplyIsSentAgainAndTheInviteIsSeenOnce() async throws {
        let net = try await TestNetwork.shared()
        let inbox = await net.carol.events()
        let bytes = Array("reply lost once \(UUID())".utf8)
        let carol = net.carol
        let answer = Array("answer \(UUID())".utf8)
        await net.alice.loseNextInvite(carrying: answer)
        let before = await carol.stats().repeatedInvites
        let answering = Task {
            let invite = await inbox.first(within: .seconds(30)) { event -> IncomingInvite? in
                if case .inviteRequest(let invite) = event, invite.data == bytes { return invite }
                return nil
            }
            guard let invite else { return false }
            try await carol.replyInvite(invite, status: 0, data: answer)
            return true
        }
        let reply = try await net.alice.sendInvite(bytes, to: net.carol.userId.description, timeout: .seconds(30))
        #expect(try await answering.value)
        #expect(reply == InviteReply(status: 0, data: answer))
        // The repeat was answered from what Carol sent, and not given to her app again.
        let again = await inbox.first(within: .milliseconds(500)) { event -> Bool? in
            if case .inviteRequest(let invite) = event, invite.data == bytes { return true }
            return nil
        }
        #expect(again == nil)
        #expect(await carol.stats().repeatedInvites > before)
    }

    @Test func unansweredInviteEndsWithTimeoutStatus() async throws {
        let net = try await TestNetwork.shared()
        let started = ContinuousClock.now
        let reply = try await net.alice.sendInvite(
            Array("nobody answers".utf8), to: net.carol.userId.description, timeout: .seconds(1))
        #expect(reply == .timeout)
        #expect(ContinuousClock.now - started >= .seconds(1))
    }

    @Test func extensionRoutingDeliversToTheRegisteredExtensionOnly() async throws {
        let net = try await TestNetwork.shared()
        let name = "ext\(UInt16.random(in: 0...9999))"
        let extensionStream = try await net.bob.registerExtension(name)
        let mainStream = await net.bob.events()
        let token = Array(UUID().uuidString.utf8)
        let bob = net.bob
        let answering = Task {
            let invite = await extensionStream.first(within: .seconds(30)) { event -> IncomingInvite? in
                if case .inviteRequest(let invite) = event, invite.data == token { return invite }
                return nil
            }
            guard let invite else { return false }
            #expect(invite.extensionName == name)
            try await bob.replyInvite(invite, status: 0, data: Array("data".utf8))
            return true
        }
        let target = net.bob.userId.description + ":" + name
        let reply = try await net.alice.sendInvite(token, to: target)
        #expect(try await answering.value)
        #expect(reply.status == 0 && reply.data == Array("data".utf8))

        // A message to the extension arrives on its stream with the extension name ...
        let receipt = try await net.alice.deliverMessage(token, to: target)
        #expect(receipt == .delivered)
        let onExtension = await extensionStream.first(within: .seconds(10)) { event -> String? in
            if case .message(_, let ext?, token, _, _) = event { return ext }
            return nil
        }
        #expect(onExtension == name)
        // ... and neither it nor the invite reached the main stream.
        let leaked = await mainStream.first(within: .milliseconds(300)) { event -> Bool? in
            switch event {
            case .message(_, _, token, _, _): true
            case .inviteRequest(let invite) where invite.data == token: true
            default: nil
            }
        }
        #expect(leaked == nil)
        await net.bob.unregisterExtension(name)
    }

    @Test func inviteToAnUnknownExtensionIsRefusedAtOnce() async throws {
        let net = try await TestNetwork.shared()
        let started = ContinuousClock.now
        let reply = try await net.alice.sendInvite([1, 2, 3], to: net.bob.userId.description + ":nosuchext")
        #expect(reply.status == InviteReply.unknownExtensionStatus)
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}
