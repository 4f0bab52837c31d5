/// Token buckets by key (a user id, an address): each key may spend `burst`
/// at once and gets `perMinute` back a minute. Pure: the time comes in.
/// Bounded: at most `maxKeys` buckets are kept; past it the full ones (keys
/// quiet long enough to have all their tokens back, so forgetting them
/// changes nothing) are dropped, and if none is full a new key is refused
/// until one is: many keys at once cannot grow the table.
struct RateLimiter: Sendable {
    /// Tokens a key gets back a minute.
    let perMinute: Double
    /// Tokens a key holds at most (what it may spend at once).
    let burst: Double
    /// Buckets kept at most.
    let maxKeys: Int
    private var buckets: [String: (tokens: Double, at: Int64)] = [:]

    init(perMinute: Double, burst: Double, maxKeys: Int = 100_000) {
        self.perMinute = perMinute
        self.burst = burst
        self.maxKeys = maxKeys
    }

    /// Takes a token for `key` at `now` (ms); false when it has none left.
    mutating func allow(_ key: String, now: Int64) -> Bool {
        var bucket: (tokens: Double, at: Int64) = buckets[key].map { refilled($0, now: now) } ?? (burst, now)
        if buckets[key] == nil, buckets.count >= maxKeys {
            buckets = buckets.filter { refilled($0.value, now: now).tokens < burst }
            guard buckets.count < maxKeys else { return false }
        }
        guard bucket.tokens >= 1 else {
            buckets[key] = bucket
            return false
        }
        bucket.tokens -= 1
        buckets[key] = bucket
        return true
    }

    /// The bucket as it stands at `now`.
    private func refilled(_ bucket: (tokens: Double, at: Int64), now: Int64) -> (tokens: Double, at: Int64) {
        let elapsed = Double(max(now - bucket.at, 0)) / 60_000
        return (min(burst, bucket.tokens + elapsed * perMinute), max(now, bucket.at))
    }

    /// Buckets kept now (for tests and stats).
    var count: Int { buckets.count }
}
