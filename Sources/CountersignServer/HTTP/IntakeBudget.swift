import Metrics

/// A budget for one kind of public input that is stored without being counted: so many a minute from each source
/// (``SourceGrouping``), and so many a minute from all sources together. A request within both spends from both; one
/// beyond either spends nothing.
struct IntakeBudget: Sendable {
    /// What the budget is for, as the metrics label it (`rejected_body`, `rejected_receipt`, `unverifiable`).
    let kind: String
    let perSource: SourceRateLimiter
    let global: SourceRateLimiter
    private let exceeded: (source: Counter, global: Counter)

    /// A budget of `perSourcePerMinute` from each source and `globalPerMinute` in all; 0 allows none. Requests beyond it
    /// are counted with `metrics`.
    init(kind: String, perSourcePerMinute: Int, globalPerMinute: Int, metrics: any MetricsFactory) {
        self.kind = kind
        perSource = SourceRateLimiter(rate: Double(perSourcePerMinute) / 60, burst: Double(perSourcePerMinute))
        global = SourceRateLimiter(rate: Double(globalPerMinute) / 60, burst: Double(globalPerMinute), capacity: 1)
        exceeded = (Counter(label: "countersign_budget_exceeded_total", dimensions: [("kind", kind), ("scope", "source")], factory: metrics),
                    Counter(label: "countersign_budget_exceeded_total", dimensions: [("kind", kind), ("scope", "global")], factory: metrics))
    }

    /// Spends one from `source`'s share and the global one; nil when allowed, else how long until the next would be.
    func spend(_ source: String) -> Duration? {
        guard perSource.rate > 0, global.rate > 0 else {
            exceeded.source.increment()
            return .seconds(60)
        }
        if let wait = perSource.acquire(source) {
            exceeded.source.increment()
            return wait
        }
        if let wait = global.acquire("*") {
            exceeded.global.increment()
            return wait
        }
        return nil
    }
}
