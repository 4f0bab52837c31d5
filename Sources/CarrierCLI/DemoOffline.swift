import AsyncExtras
import CarrierNode
import Foundation

/// The offline part of the demo: Bob goes offline, Alice's message waits on
/// the Express node (sealed for Bob), Bob comes back and receives it once.
enum DemoOffline {
    /// Returns the Bob that came back (a new node on his data directory, as a
    /// restarted process would have).
    static func story(
        alice: Carrier, bob: Carrier, comeBack: () throws -> Carrier,
        record: (String, String, ContinuousClock.Instant, String) -> Void
    ) async throws -> Carrier {
        var started = ContinuousClock.now
        let aliceEvents = await alice.events()
        let bobId = bob.userId
        await bob.stop()
        _ = await aliceEvents.first(within: .seconds(30)) { event -> Bool? in
            if case .friendConnection(bobId, false) = event { return true }
            return nil
        }
        let text = "see you when you are back"
        let receipt = try await alice.deliverMessage(Array(text.utf8), to: bobId.description)
        guard receipt == .offline else {
            throw CarrierError.invalidArgument("the message to offline Bob was not stored on Express: \(receipt)")
        }
        record("offlineStoreMs", "offline message kept", started, "Bob is offline; sealed for him on Express")

        started = ContinuousClock.now
        let again = try comeBack()
        let events = await again.events()
        try await again.start()
        let aliceId = alice.userId
        let arrived = await events.first(within: .seconds(90)) { event -> String? in
            if case .message(aliceId, nil, let data, _, true) = event { return String(decoding: data, as: UTF8.self) }
            return nil
        }
        guard arrived == text else { throw CarrierError.timedOut("Bob did not get the offline message from Express") }
        guard await again.waitUntilConnected(to: aliceId, timeout: .seconds(60)),
            await alice.waitUntilConnected(to: bobId, timeout: .seconds(60))
        else { throw CarrierError.timedOut("Bob's link to Alice after coming back") }
        record("offlineDeliverMs", "offline message", started, "Bob came back and pulled \"\(text)\" from Express")
        return again
    }
}
