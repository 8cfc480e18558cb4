import Logging
import Metrics
import Synchronization

/// A budget for one kind of public input that is stored without being counted: so many a minute from each source
/// (``SourceGrouping``), and at most so many in any 60 seconds from all sources together. A request within both spends
/// from both; one beyond either spends nothing.
///
/// The global budget is fair to sources that have sent nothing. Busy sources (those that sent anything in the last
/// minute) together get at most ``shared`` of it in any 60 s; the rest, ``reserve`` (a quarter, at least 1), is kept
/// for quiet ones: a source that has sent nothing for a minute, or that the reserve refused and that waited the
/// `Retry-After` it was given. So a flood from a few sources never refuses a new one: a quiet source is refused only
/// when ``reserve`` quiet sources were admitted in the last minute. A source is quiet at most once a minute (once
/// admitted it must be silent for a minute to be quiet again), so crowding the reserve out takes ``reserve`` sources a
/// minute on each receiver. What is remembered is bounded: ``capacity`` sources' buckets and last requests, forgetting
/// those that have been quiet first (if even that is not enough, it starts afresh: everyone is quiet once, and still
/// no more than ``global`` are admitted).
final class IntakeBudget: Sendable {
    /// What the budget is for, as the metrics label it (`rejected_body`, `rejected_receipt`, `unverifiable`,
    /// `apple_ads_submission`).
    let kind: String
    let perSource: SourceRateLimiter
    /// Admitted from all sources together in any 60 s, at most.
    let global: Int
    /// Of ``global``, what busy sources may take together in any 60 s.
    let shared: Int
    /// Sources remembered at most.
    let capacity: Int
    /// The budgets' minute; a source that has sent nothing for this long is quiet.
    static let window = Duration.seconds(60)
    private let state = Mutex(State())
    private let exceeded: (source: Counter, global: Counter, reserve: Counter)
    private let reserveUsed: Counter
    private let saturated: Gauge
    private let logger: Logger?

    /// ``global`` − ``shared``: kept for quiet sources.
    var reserve: Int { global - shared }

    /// A budget of `perSourcePerMinute` from each source and `globalPerMinute` in all; 0 allows none. Requests beyond it
    /// are counted with `metrics`; `logger` warns, at most once a minute, while busy sources have spent their share.
    init(kind: String, perSourcePerMinute: Int, globalPerMinute: Int, metrics: any MetricsFactory, logger: Logger? = nil,
         capacity: Int = 100_000) {
        self.kind = kind
        self.capacity = capacity
        self.logger = logger
        perSource = SourceRateLimiter(rate: Double(max(0, perSourcePerMinute)) / 60, burst: Double(max(0, perSourcePerMinute)), capacity: capacity)
        let global = max(0, globalPerMinute)
        self.global = global
        shared = global > 0 ? global - max(1, global / 4) : 0
        exceeded = (Counter(label: "countersign_budget_exceeded_total", dimensions: [("kind", kind), ("scope", "source")], factory: metrics),
                    Counter(label: "countersign_budget_exceeded_total", dimensions: [("kind", kind), ("scope", "global")], factory: metrics),
                    Counter(label: "countersign_budget_exceeded_total", dimensions: [("kind", kind), ("scope", "reserve")], factory: metrics))
        reserveUsed = Counter(label: "countersign_budget_reserve_used_total", dimensions: [("kind", kind)], factory: metrics)
        saturated = Gauge(label: "countersign_budget_saturated", dimensions: [("kind", kind)], factory: metrics)
        saturated.record(0)
    }

    /// Spends one from `source`'s share and the global one at `now`; nil when allowed, else how long until the next
    /// would be.
    func spend(_ source: String, now: ContinuousClock.Instant = .now) -> Duration? {
        guard perSource.rate > 0 else {
            exceeded.source.increment()
            return Self.window
        }
        guard global > 0 else {
            exceeded.global.increment()
            return Self.window
        }
        let (answer, warn): (Answer, Bool) = state.withLock { state in
            let (time, elapsed) = state.advance(to: now)
            let second = Int(elapsed.components.seconds)
            let quiet = state.seen[source].map { $0.isQuiet(at: time) } ?? true
            let admitted = state.admitted(at: second)
            let result: Answer
            if let wait = perSource.acquire(source, now: time) {
                result = .refused(.source, wait)
            } else if admitted < shared {
                result = .admitted(fromReserve: false)
            } else if quiet, admitted < global {
                result = .admitted(fromReserve: true)
            } else {
                perSource.refund(source)
                if quiet {
                    result = .refused(.reserve, state.wait(below: global, second: second, elapsed: elapsed) ?? Self.window)
                } else {
                    // A busy source waits for the shared part, or a minute's silence, after which it is quiet.
                    result = .refused(.global, min(state.wait(below: shared, second: second, elapsed: elapsed) ?? Self.window, Self.window))
                }
            }
            var seen = Seen(last: time, patientFrom: nil)
            if case .refused(.reserve, let wait) = result { seen.patientFrom = time + wait }
            state.remember(source, seen, capacity: capacity)
            let spent: Bool
            switch result {
            case .admitted(let fromReserve):
                state.add(at: second)
                spent = fromReserve
            case .refused(let scope, _):
                spent = scope != .source
            }
            // Saturated while busy sources found the shared part spent within the last minute (as of this request).
            if spent { state.saturatedUntil = time + Self.window }
            let isSaturated = state.saturatedUntil.map { time < $0 } ?? false
            if isSaturated != state.saturated {
                state.saturated = isSaturated
                saturated.record(isSaturated ? 1 : 0)
            }
            let shouldWarn = spent && (state.warned.map { time - $0 >= Self.window } ?? true)
            if shouldWarn { state.warned = time }
            return (result, shouldWarn)
        }
        switch answer {
        case .admitted(let fromReserve):
            if fromReserve { reserveUsed.increment() }
        case .refused(.source, _):
            exceeded.source.increment()
        case .refused(.global, _):
            exceeded.global.increment()
        case .refused(.reserve, _):
            exceeded.reserve.increment()
        }
        if warn, let logger {
            var reserveSpent = false
            if case .refused(.reserve, _) = answer { reserveSpent = true }
            logger.warning("busy sources have spent the budget they share; sources that have sent nothing for a minute draw on the reserve", metadata: [
                "kind": "\(kind)", "global_per_minute": "\(global)", "reserve_per_minute": "\(reserve)", "reserve_spent": "\(reserveSpent)",
            ])
        }
        if case .refused(_, let wait) = answer { return wait }
        return nil
    }

    private enum Scope: Equatable {
        case source, global, reserve
    }

    private enum Answer {
        case admitted(fromReserve: Bool)
        case refused(Scope, Duration)
    }

    /// What is known of a source that asked lately.
    private struct Seen {
        /// Its last request, whatever the answer.
        var last: ContinuousClock.Instant
        /// When the reserve refused it although it was quiet: from when it is quiet again (its `Retry-After`).
        var patientFrom: ContinuousClock.Instant?

        /// Whether it may draw on the reserve at `now`.
        func isQuiet(at now: ContinuousClock.Instant) -> Bool {
            if now - last >= IntakeBudget.window { return true }
            guard let patientFrom else { return false }
            return now >= patientFrom
        }
    }

    /// Admissions in one second; ``State/slots`` holds the last 61.
    private struct Slot {
        var second = -1
        var count = 0
    }

    private struct State {
        /// The first request's time: seconds are counted from it.
        var origin: ContinuousClock.Instant?
        /// The latest time seen (callers read the clock before they take the lock, so one may come a little late).
        var latest: ContinuousClock.Instant?
        /// Admissions by second, at index `second % 61`.
        var slots = [Slot](repeating: Slot(), count: 61)
        var seen: [String: Seen] = [:]
        var saturatedUntil: ContinuousClock.Instant?
        var saturated = false
        var warned: ContinuousClock.Instant?

        /// `now`, never earlier than a time already seen, and the time since the first request.
        mutating func advance(to now: ContinuousClock.Instant) -> (now: ContinuousClock.Instant, elapsed: Duration) {
            let time = max(now, latest ?? now)
            latest = time
            let origin = self.origin ?? time
            self.origin = origin
            return (time, time - origin)
        }

        /// Admitted in the 61 seconds that overlap the 60 s up to `second`'s end: so any 60 s holds at most what the
        /// limit allowed.
        func admitted(at second: Int) -> Int {
            slots.reduce(0) { total, slot in slot.second > second - 61 && slot.second <= second ? total + slot.count : total }
        }

        mutating func add(at second: Int) {
            let index = second % slots.count
            if slots[index].second != second { slots[index] = Slot(second: second, count: 0) }
            slots[index].count += 1
        }

        /// How long until fewer than `limit` are admitted, as seconds leave the window; nil for a limit of 0.
        func wait(below limit: Int, second: Int, elapsed: Duration) -> Duration? {
            guard limit > 0 else { return nil }
            var count = admitted(at: second)
            for leaving in max(0, second - 60)...second {
                let slot = slots[leaving % slots.count]
                if slot.second == leaving { count -= slot.count }
                // The second `leaving` is out of the window once 61 seconds have begun after it.
                if count < limit { return Duration.seconds(leaving + 61) - elapsed }
            }
            return IntakeBudget.window
        }

        /// Records `seen` for `source`; when `capacity` are remembered, forgets the quiet ones first (forgetting them
        /// changes nothing), and everyone if that leaves more than three quarters.
        mutating func remember(_ source: String, _ seen: Seen, capacity: Int) {
            if self.seen[source] == nil, self.seen.count >= capacity {
                self.seen = self.seen.filter { !$0.value.isQuiet(at: seen.last) }
                if self.seen.count > capacity * 3 / 4 { self.seen.removeAll(keepingCapacity: true) }
            }
            self.seen[source] = seen
        }
    }
}
