/// Waits until `condition` holds, checking every 20 ms, for at most `within`;
/// whether it came to hold. For state that has no event to wait for.
public func eventually(within limit: Duration, _ condition: @Sendable () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(20))  // polling, bounded by `limit`
    }
}
