import Synchronization

/// A token bucket per source address for the public routes apps call: on average at most ``rate`` requests a second
/// from one address, and ``burst`` at once. It keeps at most ``capacity`` addresses, forgetting idle ones first.
///
/// It is each receiver's own: several receivers behind a load balancer each allow the rate, and behind a proxy that
/// hides the client's address every client shares one bucket (docs/threat-model.md).
final class SourceRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    /// Requests a second refilled per address.
    let rate: Double
    /// Requests an address may make at once.
    let burst: Double
    /// Addresses remembered at most.
    let capacity: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    /// A limiter of `rate` requests a second with bursts of `burst`.
    init(rate: Double, burst: Double, capacity: Int = 100_000) {
        self.rate = rate
        self.burst = burst
        self.capacity = capacity
    }

    /// Takes one request's token for `source`; nil when allowed, else how long until the next token.
    func acquire(_ source: String, now: ContinuousClock.Instant = .now) -> Duration? {
        buckets.withLock { buckets in
            var bucket = buckets[source] ?? Bucket(tokens: burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + seconds * rate)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[source] = bucket
                return .milliseconds(Int64(((1 - bucket.tokens) / rate * 1000).rounded(.up)))
            }
            bucket.tokens -= 1
            if buckets[source] == nil, buckets.count >= capacity { forgetIdle(&buckets, now: now) }
            buckets[source] = bucket
            return nil
        }
    }

    /// Gives back the token ``acquire(_:now:)`` just took for `source`: the request was allowed here but refused
    /// elsewhere, so it spent nothing.
    func refund(_ source: String) {
        buckets.withLock { buckets in
            guard var bucket = buckets[source] else { return }
            bucket.tokens = min(burst, bucket.tokens + 1)
            buckets[source] = bucket
        }
    }

    /// Drops addresses whose bucket has refilled (they are as if never seen); if none has, starts afresh.
    private func forgetIdle(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        let refill = Duration.milliseconds(Int64(burst / rate * 1000))
        buckets = buckets.filter { now - $0.value.updated < refill }
        if buckets.count >= capacity { buckets.removeAll(keepingCapacity: true) }
    }
}
