/// `body`'s result, or nil once `timeout` passes (body is then cancelled).
/// For waiting on something without hanging.
public func withTimeout<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async -> T?) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

extension AsyncStream where Element: Sendable {
    /// The first element that `match` maps to a value; nil if the stream ends
    /// or `timeout` passes first. For waiting on one event without hanging.
    public func first<T: Sendable>(
        within timeout: Duration, _ match: @escaping @Sendable (Element) -> T?
    ) async -> T? {
        await withTimeout(timeout) {
            for await element in self {
                if let value = match(element) { return value }
            }
            return nil
        }
    }
}
