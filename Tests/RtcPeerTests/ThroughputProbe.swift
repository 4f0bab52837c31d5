import Foundation
import RtcPeer
import RtcSCTP
import Testing

@Suite(.serialized) struct ThroughputProbe {
    /// 50 MB over one reliable channel between two connections in this process (the
    /// number is printed for the notes; `make bench` measures properly).
    @Test func fiftyMegabytesArriveIntact() async throws {
        let call = try LoopbackCall()
        let channel = await call.offerer.createDataChannel(DataChannelParameters(label: "bulk"))
        let answererEvents = await call.answerer.events()
        #expect(try await call.connect())
        let remote = try #require(
            await answererEvents.first(within: .seconds(10)) { event -> DataChannel? in
                if case .dataChannel(let channel) = event { return channel }
                return nil
            })
        #expect(await channel.events.first(within: .seconds(5)) { $0 == .open ? true : nil } == true)
        let total = 50 * 1024 * 1024
        let chunk = [UInt8](repeating: 0x5A, count: 64 * 1024)
        let receiver = Task {
            var received = 0
            for await event in remote.events {
                if case .binary(let bytes) = event {
                    received += bytes.count
                    if received >= total { break }
                }
            }
            return received
        }
        channel.bufferedAmountLowThreshold = 1 << 20
        let started = ContinuousClock.now
        var sent = 0
        var events = channel.events.makeAsyncIterator()
        while sent < total {
            if channel.bufferedAmount > 4 << 20 {
                while let event = await events.next(), event != .bufferedAmountLow {}
                continue
            }
            try channel.send(chunk)
            sent += chunk.count
        }
        let received = await receiver.value
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("50 MB in \(elapsed): \(Double(total) / 1e6 / seconds) MB/s")  // informational
        #expect(received == total)
        await call.close()
    }
}
