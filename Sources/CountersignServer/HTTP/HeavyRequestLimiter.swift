import Hummingbird
import Store
import Synchronization

/// Bounds how many heavy requests (exports, large reports, reconciliation uploads) run at once, per API key and in all.
///
/// A heavy request holds memory and a database connection while it runs, and for as long as its client is slow to
/// read; without a bound a read key could open hundreds (trust round 4, finding 10). A request beyond the bound is
/// refused at once, never queued: a queue would hold connections just the same. Each receiver counts its own.
final class HeavyRequestLimiter: Sendable {
    private struct State {
        /// Requests running now, by key (a key with none has no entry).
        var running: [String: Int] = [:]
        var total = 0
        /// Requests that have finished since the limiter was made.
        var finished = 0
    }

    /// What the limiter bounds (`export`, `report`, `reconcile`), for messages.
    let kind: String
    /// Requests one key may run at once.
    let perKey: Int
    /// Requests the server runs at once, every key together.
    let total: Int
    private let state = Mutex(State())

    /// Seconds a refused client is told to wait (`Retry-After`).
    static let retryAfter = 10

    init(kind: String, perKey: Int, total: Int) {
        self.kind = kind
        self.perKey = perKey
        self.total = total
    }

    /// A permit now, or 429 `too_many_requests` (this key already runs `perKey`) / 503 `server_busy` (the server runs `total`), both with `Retry-After`.
    func acquire(key: String) throws(APIError) -> HeavyRequestPermit {
        let refusal: APIErrorCode? = state.withLock { state in
            if state.running[key, default: 0] >= perKey { return .tooManyRequests }
            if state.total >= total { return .serverBusy }
            state.running[key, default: 0] += 1
            state.total += 1
            return nil
        }
        let headers: HTTPFields = [.retryAfter: String(Self.retryAfter)]
        switch refusal {
        case .tooManyRequests?:
            throw APIError(.tooManyRequests, .tooManyRequests,
                           "this API key already runs \(perKey) \(kind) request\(perKey == 1 ? "" : "s"); retry when one has finished", headers: headers)
        case .some:
            throw APIError(.serviceUnavailable, .serverBusy, "the server already runs \(total) \(kind) requests; retry in \(Self.retryAfter) s",
                           headers: headers)
        case nil:
            return HeavyRequestPermit(limiter: self, key: key)
        }
    }

    /// Requests running now (tests, a gauge).
    var inFlight: Int { state.withLock { $0.total } }

    /// Requests that have finished since the limiter was made (``MemoryTrimmer`` trims after new ones).
    var finished: Int { state.withLock { $0.finished } }

    /// Ends one of `key`'s requests; ``HeavyRequestPermit`` calls it once.
    fileprivate func release(key: String) {
        state.withLock { state in
            let running = state.running[key, default: 0]
            state.running[key] = running > 1 ? running - 1 : nil
            state.total = max(0, state.total - 1)
            state.finished += 1
        }
    }

    /// The key an API key's requests count against: its id, since two keys may share a name.
    static func key(apiKeyID: Int64) -> String { "api_key/\(apiKeyID)" }

    /// The key a request counts against: its API key (by id; by name for a grant without one; one shared key for a
    /// request with no grant, which the private routes never see).
    static func key(for grant: APIKeyGrant?) -> String {
        if let id = grant?.id { return key(apiKeyID: id) }
        return "api_key_name/\(grant?.name ?? "")"
    }
}

/// One running heavy request; released once, by `release()` or when it is freed.
final class HeavyRequestPermit: Sendable {
    private let limiter: HeavyRequestLimiter
    private let key: String
    private let released = Atomic<Bool>(false)

    fileprivate init(limiter: HeavyRequestLimiter, key: String) {
        self.limiter = limiter
        self.key = key
    }

    /// Ends the request's hold; later calls do nothing.
    func release() {
        if !released.exchange(true, ordering: .acquiringAndReleasing) { limiter.release(key: key) }
    }

    deinit { release() }
}

extension AppRequestContext {
    /// Who this request's heavy work counts against (``HeavyRequestLimiter``): its API key.
    var heavyRequestKey: String { HeavyRequestLimiter.key(for: grant) }
}
