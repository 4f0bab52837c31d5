import Foundation
import TestSupport
import Testing

@testable import RtcSCTP

/// An association whose events come out as a stream; packets go straight to its peer.
final class SctpPeer: Sendable {
    let association: SctpAssociation
    let events: AsyncStream<SctpAssociation.Event>

    init(client: Bool, peer: @escaping @Sendable () -> SctpPeer?) {
        let (events, sink) = AsyncStream<SctpAssociation.Event>.makeStream()
        self.events = events
        association = SctpAssociation(
            isDtlsClient: client, onOutbound: { packet in peer()?.association.receive(packet) },
            onEvent: { sink.yield($0) })
    }

    func next<T: Sendable>(
        _ timeout: Duration = .seconds(10), _ match: @escaping @Sendable (SctpAssociation.Event) -> T?
    ) async -> T? {
        await events.first(within: timeout, match)
    }

    func open(_ parameters: DataChannelParameters) async throws -> UInt16 {
        try await withCheckedThrowingContinuation { continuation in
            association.openChannel(parameters) { continuation.resume(with: $0) }
        }
    }
}

final class PeerBox: @unchecked Sendable {
    // Set once before any packet flows.
    var peer: SctpPeer?
}

/// usrsctp is process-wide: these tests run one at a time (field notes).
@Suite(.serialized) struct SctpAssociationTests {
    static func connectedPair() async -> (SctpPeer, SctpPeer) {
        let toServer = PeerBox()
        let toClient = PeerBox()
        let client = SctpPeer(client: true) { toServer.peer }
        let server = SctpPeer(client: false) { toClient.peer }
        toServer.peer = server
        toClient.peer = client
        client.association.start(remoteMaxMessageSize: UInt64(SctpAssociation.maxMessageSize))
        server.association.start(remoteMaxMessageSize: UInt64(SctpAssociation.maxMessageSize))
        async let a = client.next { $0 == .connected ? true : nil }
        async let b = server.next { $0 == .connected ? true : nil }
        let (clientUp, serverUp) = await (a, b)
        #expect(clientUp == true && serverUp == true)
        return (client, server)
    }

    @Test func dcepOpensAChannelAndMessagesFlowBothWays() async throws {
        let (client, server) = await Self.connectedPair()
        defer {
            client.association.close()
            server.association.close()
        }
        async let remoteOpen = server.next { event -> (UInt16, DataChannelParameters)? in
            if case .channelOpen(let id, let parameters, true) = event { return (id, parameters) }
            return nil
        }
        let id = try await client.open(DataChannelParameters(label: "data", protocol: "carrier-file"))
        #expect(id % 2 == 0)  // the DTLS client takes even ids
        let opened = await remoteOpen
        #expect(opened?.0 == id && opened?.1.label == "data" && opened?.1.protocol == "carrier-file")
        #expect(
            await client.next { event -> Bool? in
                if case .channelOpen(id, _, false) = event { return true }
                return nil
            } == true)

        try client.association.send(Array("hello".utf8), binary: false, on: id)
        let text = await server.next { event -> [UInt8]? in
            if case .message(id, let data, false) = event { return data }
            return nil
        }
        #expect(text == Array("hello".utf8))
        try server.association.send([], binary: true, on: id)
        let empty = await client.next { event -> [UInt8]? in
            if case .message(id, let data, true) = event { return data }
            return nil
        }
        #expect(empty == [])
    }

    @Test func anIdleAssociationSlowsItsTimerAndWakesForTraffic() async throws {
        let (client, server) = await Self.connectedPair()
        defer {
            client.association.close()
            server.association.close()
        }
        let stack = SctpStack.shared
        // A second without packets: usrsctp's timer drops to the idle pace.
        let deadline = ContinuousClock.now + .seconds(5)
        while !stack.queue.sync(execute: { stack.idle }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(stack.queue.sync { stack.idle })
        // Traffic brings it back, and the channel works as before.
        let id = try await client.open(DataChannelParameters(label: "after a pause"))
        try client.association.send(Array("awake".utf8), binary: false, on: id)
        let text = await server.next { event -> [UInt8]? in
            if case .message(id, let data, false) = event { return data }
            return nil
        }
        #expect(text == Array("awake".utf8))
        #expect(!stack.queue.sync { stack.idle })
    }

    @Test func packetsWithAWrongChecksumAreDroppedAndCounted() async throws {
        let (client, server) = await Self.connectedPair()
        defer {
            client.association.close()
            server.association.close()
        }
        // A DATA-sized packet of the right ports whose checksum is wrong.
        var corrupt: [UInt8] = [0x13, 0x88, 0x13, 0x88] + [UInt8](repeating: 0xAB, count: 60)
        corrupt[8] ^= 0xFF
        server.association.receive(corrupt)
        #expect(server.association.checksumFailures == 1)
        let id = try await client.open(DataChannelParameters(label: "after"))
        try client.association.send(Array("still up".utf8), binary: false, on: id)
        let text = await server.next { event -> [UInt8]? in
            if case .message(id, let data, false) = event { return data }
            return nil
        }
        #expect(text == Array("still up".utf8))
        #expect(client.association.checksumFailures == 0)
    }

    @Test func largeMessagesArriveWholeAndOversizeIsRefused() async throws {
        let (client, server) = await Self.connectedPair()
        defer {
            client.association.close()
            server.association.close()
        }
        let id = try await client.open(DataChannelParameters(label: "big"))
        _ = await server.next { event -> Bool? in
            if case .channelOpen = event { return true }
            return nil
        }
        let big = (0..<(512 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try client.association.send(big, binary: true, on: id)
        let received = await server.next { event -> [UInt8]? in
            if case .message(id, let data, true) = event { return data }
            return nil
        }
        #expect(received == big)
        #expect(
            throws: DataChannelError.tooLarge(SctpAssociation.maxMessageSize + 1, limit: SctpAssociation.maxMessageSize)
        ) {
            try client.association.send(
                [UInt8](repeating: 0, count: SctpAssociation.maxMessageSize + 1), binary: true, on: id)
        }
    }

    @Test func partialReliabilityAndNegotiatedChannels() async throws {
        let (client, server) = await Self.connectedPair()
        defer {
            client.association.close()
            server.association.close()
        }
        async let remote = server.next { event -> DataChannelParameters? in
            if case .channelOpen(_, let parameters, true) = event { return parameters }
            return nil
        }
        _ = try await client.open(DataChannelParameters(label: "lossy", ordered: false, maxRetransmits: 0))
        let parameters = await remote
        #expect(parameters?.ordered == false && parameters?.maxRetransmits == 0 && parameters?.isReliable == false)

        // Both sides create the same pre-negotiated channel: no DCEP.
        let a = try await client.open(DataChannelParameters(label: "pre", negotiatedId: 7))
        let b = try await server.open(DataChannelParameters(label: "pre", negotiatedId: 7))
        #expect(a == 7 && b == 7)
        try server.association.send(Array("direct".utf8), binary: false, on: 7)
        let text = await client.next { event -> [UInt8]? in
            if case .message(7, let data, false) = event { return data }
            return nil
        }
        #expect(text == Array("direct".utf8))
        do {
            _ = try await client.open(DataChannelParameters(label: "again", negotiatedId: 7))
            Issue.record("a second channel on id 7 was allowed")
        } catch let error as DataChannelError {
            #expect(error == .idInUse(7))
        }
    }

    @Test func closingAChannelClosesItOnBothSides() async throws {
        let (client, server) = await Self.connectedPair()
        defer {
            client.association.close()
            server.association.close()
        }
        let id = try await client.open(DataChannelParameters(label: "short"))
        _ = await server.next { event -> Bool? in
            if case .channelOpen = event { return true }
            return nil
        }
        client.association.closeChannel(id)
        async let serverClosed = server.next { $0 == .channelClosed(id: id) ? true : nil }
        async let clientClosed = client.next { $0 == .channelClosed(id: id) ? true : nil }
        let (a, b) = await (serverClosed, clientClosed)
        #expect(a == true && b == true)
    }

    /// W3C close: what was queued before still goes, then the channel closes.
    @Test func aChannelClosedBehindQueuedMessagesDeliversThemFirst() async throws {
        let (client, server) = await Self.connectedPair()
        defer {
            client.association.close()
            server.association.close()
        }
        let id = try await client.open(DataChannelParameters(label: "file"))
        _ = await server.next { event -> Bool? in
            if case .channelOpen = event { return true }
            return nil
        }
        // More than usrsctp takes at once (32 MB), a last word, and the close right behind them.
        let block = [UInt8](repeating: 7, count: 64 << 10)
        for _ in 0..<512 { try client.association.send(block, binary: true, on: id) }
        try client.association.send(Array("cancel".utf8), binary: false, on: id)
        client.association.closeChannel(id)
        let received = await server.next(.seconds(30)) { event -> (bytes: Int, text: String?)? in
            switch event {
            case .message(id, let data, true):
                _ = data
                return nil
            case .message(id, let data, false): return (0, String(decoding: data, as: UTF8.self))
            case .channelClosed(id): return (0, nil)
            default: return nil
            }
        }
        #expect(received?.text == "cancel", "the close overtook the queued messages")
        #expect(await server.next { $0 == .channelClosed(id: id) ? true : nil } == true)
    }

    @Test func bufferedAmountFallsAndSignalsLowWater() async throws {
        let (client, server) = await Self.connectedPair()
        defer {
            client.association.close()
            server.association.close()
        }
        let id = try await client.open(DataChannelParameters(label: "flow"))
        _ = await server.next { event -> Bool? in
            if case .channelOpen = event { return true }
            return nil
        }
        client.association.setBufferedAmountLowThreshold(64 * 1024, on: id)
        async let sawLow = client.next(.seconds(30)) { $0 == .bufferedAmountLow(id: id) ? true : nil }
        let chunk = [UInt8](repeating: 1, count: 256 * 1024)
        for _ in 0..<40 { try client.association.send(chunk, binary: true, on: id) }  // 10 MB, more than the socket takes
        // Everything arrives, and nothing stays buffered.
        let counter = Counter()
        let all = await server.next(.seconds(30)) { event -> Bool? in
            if case .message(id, let data, true) = event, data.count == chunk.count, counter.increment() == 40 {
                return true
            }
            return nil
        }
        #expect(all == true)
        #expect(await sawLow == true)
        #expect(client.association.bufferedAmount(of: id) == 0)
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func increment() -> Int {
        lock.withLock {
            value += 1
            return value
        }
    }
}

@Suite struct DcepTests {
    @Test func channelParametersMapToDcepTypes() {
        #expect(DataChannelParameters(label: "a").isReliable)
        #expect(!DataChannelParameters(label: "a", maxLifetimeMilliseconds: 100).isReliable)
    }
}
