import CarrierSessions
import Foundation
import RtcCalls
import TestSupport
import Testing

/// Sessions, streams and channels between two managers on 127.0.0.1.
@Suite(.serialized) struct SessionTests {
    @Test func aStreamCarriesBytesBothWaysAndEndsInOrder() async throws {
        let pair = await SessionPair()
        defer { Task { await pair.stop() } }
        let (alice, bob) = try await pair.connect()
        #expect(await alice.state == .connected && alice.peer == "bob" && bob.peer == "alice")

        let offered = bob.incomingStreams
        let stream = try await alice.openStream([.reliable])
        let theirs = try requireValue(await offered.first(within: .seconds(5)) { $0 }, "Bob's stream")
        #expect(stream.state == .connected && theirs.state == .connected && stream.id == theirs.id)
        #expect(theirs.options == [.reliable])

        let payload = randomBytes(5_000_000, seed: 1)
        async let received = readAll(theirs.data)
        try await stream.write(payload)
        stream.finish()
        #expect(try await received == payload)
        try await theirs.write(Array("got it".utf8))
        theirs.finish()
        #expect(try await readAll(stream.data) == Array("got it".utf8))

        // Both ends finished and read everything: the stream closes, on both sides.
        let states = await stream.states.first(within: .seconds(5)) { $0 == .closed ? $0 : nil }
        #expect(states == .closed)
        #expect(await theirs.states.first(within: .seconds(5)) { $0 == .closed ? $0 : nil } == .closed)
    }

    @Test func aStreamGoesThroughTheReferenceStates() async throws {
        let pair = await SessionPair()
        defer { Task { await pair.stop() } }
        let (alice, _) = try await pair.connect()
        let stream = try await alice.openStream([.reliable])
        await alice.close()
        var seen: [SessionStream.State] = []
        for await state in stream.states { seen.append(state) }
        #expect(seen == [.initialized, .transportReady, .connecting, .connected, .closed])
        #expect(await alice.state == .closed)
        await #expect(throws: SessionError.self) { _ = try await alice.openStream() }
    }

    @Test func channelsMultiplexInsideAStream() async throws {
        let pair = await SessionPair()
        defer { Task { await pair.stop() } }
        let (alice, _, stream, theirs) = try await pair.stream([.reliable, .multiplexing])
        let opened = theirs.channels

        var mine: [StreamChannel] = []
        for cookie in ["one", "two", "three"] { mine.append(try await stream.openChannel(cookie: cookie)) }
        var cookies: [String: StreamChannel] = [:]
        for await channel in opened {
            cookies[channel.cookie] = channel
            if cookies.count == 3 { break }
        }
        #expect(Set(cookies.keys) == ["one", "two", "three"])
        // Each channel is its own byte stream, both ways.
        for channel in mine {
            try await channel.write(Array("to \(channel.cookie)".utf8))
            channel.finish()
        }
        for (cookie, channel) in cookies {
            #expect(try await readAll(channel) == Array("to \(cookie)".utf8))
            try await channel.write(Array("from \(cookie)".utf8))
            channel.finish()
        }
        for channel in mine { #expect(try await readAll(channel) == Array("from \(channel.cookie)".utf8)) }
        // A stream without multiplexing has no channels.
        let plain = try await alice.openStream([.reliable])
        await #expect(throws: SessionError.notMultiplexing) { _ = try await plain.openChannel() }
    }

    @Test func aReaderThatDoesNotReadPendsTheWriterAndBoundsItsMemory() async throws {
        let pair = await SessionPair()
        defer { Task { await pair.stop() } }
        let (_, _, stream, theirs) = try await pair.stream([.reliable, .multiplexing])
        let opened = theirs.channels
        let channel = try await stream.openChannel(cookie: "slow")
        let reader = try requireValue(await opened.first(within: .seconds(5)) { $0 })

        let payload = randomBytes(12_000_000, seed: 2)
        let writer = Task {
            try await channel.write(payload)
            channel.finish()
        }
        // Bob reads nothing: Alice is asked to pend, and her write waits.
        #expect(await channel.events.first(within: .seconds(10)) { $0 == .pending ? $0 : nil } == .pending)
        let unread = reader.unread.bytes
        #expect(unread < payload.count / 2, "Bob holds \(unread) bytes unread")
        // Reading lets her resume, and every byte arrives.
        #expect(try await readAll(reader) == payload)
        try await writer.value

        // The application can pend by hand too; the writer sees it.
        let second = try await stream.openChannel(cookie: "manual")
        let secondReader = try requireValue(await opened.first(within: .seconds(5)) { $0 })
        secondReader.pend()
        #expect(await second.events.first(within: .seconds(5)) { $0 == .pending ? $0 : nil } == .pending)
        secondReader.resume()
        #expect(await second.events.first(within: .seconds(5)) { $0 == .resumed ? $0 : nil } == .resumed)
    }

    @Test func aResetReachesTheOtherSideAsAFailure() async throws {
        let pair = await SessionPair()
        defer { Task { await pair.stop() } }
        let (_, _, stream, theirs) = try await pair.stream([.reliable, .multiplexing])
        let opened = theirs.channels
        let channel = try await stream.openChannel(cookie: "x")
        let other = try requireValue(await opened.first(within: .seconds(5)) { $0 })
        try await channel.write([1, 2, 3])
        channel.reset("gave up")
        await #expect(throws: SessionError.reset("gave up")) {
            while try await other.read() != nil {}
        }
        await #expect(throws: SessionError.self) { try await channel.write([4]) }
    }

    @Test func sessionsAreRefusedWhenTheyMayNotBe() async throws {
        // Bob takes no sessions: Alice hears it at once.
        let refusing = await SessionPair(
            bob: .init(peer: SessionPair.loopback, acceptsSessions: false))
        await #expect(throws: SessionError.ended("declined")) { _ = try await refusing.alice.openSession(to: "bob") }
        await refusing.stop()
        // Alice may not connect to a stranger.
        let strangers = await SessionPair(alice: .init(peer: SessionPair.loopback, mayConnect: { $0 != "bob" }))
        await #expect(throws: SessionError.notAFriend("bob")) { _ = try await strangers.alice.openSession(to: "bob") }
        await strangers.stop()
    }

    @Test func anUnreliableStreamDropsWhatIsNotReadInTime() async throws {
        let pair = await SessionPair()
        defer { Task { await pair.stop() } }
        let (_, _, stream, theirs) = try await pair.stream([])
        #expect(!theirs.data.isReliable && theirs.options == [])
        for index in 0..<100 { try await stream.write(randomBytes(30_000, seed: UInt64(index))) }
        let settled = await eventually(within: .seconds(5)) { theirs.data.unread.dropped > 0 }
        #expect(settled)
        #expect(theirs.data.unread.bytes <= 1 << 20)
    }
}
