import Foundation
import TestSupport
import Testing

@testable import RtcFileTransfer

/// Two endpoints joined by an in-memory channel (`MemoryChannel`): both file
/// protocols, refusals, cancels and application messages, end to end without SCTP.
@Suite struct FileTransferEndpointTests {
    let directory = temporaryDirectory("endpoint")

    /// A file of `size` bytes of a pattern; its path.
    func file(_ size: Int, name: String = "payload.bin") throws -> String {
        let path = directory + "/" + name
        let block = (0..<65_521).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }  // a prime: no period of 64 KiB
        var data = Data(capacity: size)
        while data.count < size { data.append(contentsOf: block.prefix(size - data.count)) }
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// What the receiving endpoint reports.
    final class Reports: @unchecked Sendable {
        private let lock = NSLock()
        private var outcomes: [FileTransferEndpoint.Outcome] = []
        private var messages: [FileTransferEndpoint.Message] = []
        private var waiters: [CheckedContinuation<Void, Never>] = []

        func received(_ outcome: FileTransferEndpoint.Outcome) { changed { outcomes.append(outcome) } }
        func message(_ message: FileTransferEndpoint.Message) { changed { messages.append(message) } }

        private func changed(_ body: () -> Void) {
            let waiters = lock.withLock {
                body()
                defer { self.waiters = [] }
                return self.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        /// Waits (bounded) until `condition` holds of the outcomes and messages.
        func wait(
            _ condition: @escaping ([FileTransferEndpoint.Outcome], [FileTransferEndpoint.Message]) -> Bool
        ) async -> ([FileTransferEndpoint.Outcome], [FileTransferEndpoint.Message]) {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let now = lock.withLock { (outcomes, messages) }
                if condition(now.0, now.1) { return now }
                let timer = Task { [weak self] in
                    try? await Task.sleep(for: .milliseconds(200))
                    self?.changed {}
                }
                await withCheckedContinuation { continuation in
                    lock.withLock { waiters.append(continuation) }
                }
                timer.cancel()
            }
            return lock.withLock { (outcomes, messages) }
        }
    }

    /// A sender and a receiver (saving into `inbox` if given) on a fresh pair.
    func endpoints(inbox: String?) async -> (FileTransferEndpoint, FileTransferEndpoint, MemoryChannel, Reports) {
        let (near, far) = MemoryChannel.pair()
        let reports = Reports()
        let sender = FileTransferEndpoint(channel: near)
        let receiver = FileTransferEndpoint(
            channel: far, receiveDirectory: inbox, peerOpened: true, onReceived: { reports.received($0) })
        await sender.start()
        await receiver.start { reports.message($0) }
        return (sender, receiver, near, reports)
    }

    @Test func aFileGoesInTheBinaryProtocolOnceThePeerSaysItSpeaksIt() async throws {
        let inbox = directory + "/in"
        let (sender, receiver, _, reports) = await endpoints(inbox: inbox)
        #expect(await sender.waitForPeerProtocol())
        let path = try file(300_000)
        let sent = try await sender.send(path: path)
        #expect(sent.ok && sent.bytes == 300_000)
        let (outcomes, _) = await reports.wait { outcomes, _ in !outcomes.isEmpty }
        let received = try #require(outcomes.first)
        #expect(received.ok && received.sha256 == sent.sha256)
        #expect(
            FileManager.default.contents(atPath: try #require(received.path))
                == FileManager.default.contents(atPath: path))
        withExtendedLifetime(receiver) {}  // the far end lives as long as the test
    }

    @Test func aFileGoesAsJsonChunks() async throws {
        let (sender, receiver, _, reports) = await endpoints(inbox: directory + "/in")
        let path = try file(70_000)
        let sent = try await sender.sendChunked(path: path)
        #expect(sent.ok && sent.bytes == 70_000)
        let (outcomes, _) = await reports.wait { outcomes, _ in !outcomes.isEmpty }
        #expect(outcomes.first?.ok == true && outcomes.first?.sha256 == sent.sha256)
        withExtendedLifetime(receiver) {}  // the far end lives as long as the test
    }

    @Test func aReceiverWithoutADirectoryRefusesAtOnce() async throws {
        let (sender, receiver, _, _) = await endpoints(inbox: nil)
        await #expect(throws: FileTransferEndpoint.TransferError.refused) {
            _ = try await sender.send(path: try file(200_000))
        }
        withExtendedLifetime(receiver) {}  // the far end lives as long as the test
    }

    @Test func applicationMessagesArriveBesideTheProtocol() async throws {
        let (sender, receiver, _, reports) = await endpoints(inbox: directory + "/in")
        try await sender.sendText("hello")
        try await sender.sendData([1, 2, 3])
        _ = try await sender.send(path: try file(1000))
        try await sender.sendText(#"{"type":"chat","text":"not a file"}"#)
        let (_, messages) = await reports.wait { outcomes, messages in messages.count == 3 && !outcomes.isEmpty }
        #expect(messages == [.text("hello"), .binary([1, 2, 3]), .text(#"{"type":"chat","text":"not a file"}"#)])
        withExtendedLifetime(receiver) {}  // the far end lives as long as the test
    }

    @Test func aCancelWhileTheSenderWaitsForTheBufferEndsBothSides() async throws {
        let (sender, receiver, near, reports) = await endpoints(inbox: directory + "/in")
        near.holding = true  // nothing drains: the sender stops at its high-water mark
        let path = try file(12 << 20)
        let sending = Task { try await sender.send(path: path) }
        let full = await near.waitUntilBuffered(above: FileTransferEndpoint.highWater)
        #expect(full, "the sender never filled the buffer")
        await receiver.cancel()
        let result = await sending.result
        #expect(throws: FileTransferEndpoint.TransferError.cancelled) { try result.get() }
        let (outcomes, _) = await reports.wait { outcomes, _ in !outcomes.isEmpty }
        #expect(outcomes.first?.cancelled == true && outcomes.first?.ok == false)
        #expect(near.bufferedAmount < 12 << 20)  // it stopped, not sent it all
        withExtendedLifetime(receiver) {}  // the far end lives as long as the test
    }

    @Test func aChannelThatClosesMidFileEndsTheSenderAndLeavesTheReceiverIncomplete() async throws {
        let (sender, receiver, near, reports) = await endpoints(inbox: directory + "/in")
        near.holding = true
        let path = try file(12 << 20)
        let sending = Task { try await sender.send(path: path) }
        let full = await near.waitUntilBuffered(above: FileTransferEndpoint.highWater)
        #expect(full, "the sender never filled the buffer")
        near.close()
        let result = await sending.result
        #expect(throws: FileTransferEndpoint.TransferError.channelClosed) { try result.get() }
        let (outcomes, _) = await reports.wait { outcomes, _ in !outcomes.isEmpty }
        #expect(outcomes.first?.isIncomplete == true)
        withExtendedLifetime(receiver) {}  // the far end lives as long as the test
    }
}
