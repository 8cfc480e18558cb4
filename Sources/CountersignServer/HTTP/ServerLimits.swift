/// The limiters of the heavy requests, one per kind, shared by every route of that kind on this receiver
/// (docs/operations.md, "Slow readers, heavy requests and memory").
package struct ServerLimits: Sendable {
    /// `GET /v1/conversions/export`: 2 per key, 16 in all.
    let export: HeavyRequestLimiter
    /// Large reports: 4 per key, 8 in all.
    let report: HeavyRequestLimiter
    /// Reconciliation uploads: 1 per key, 2 in all.
    let reconcile: HeavyRequestLimiter
    /// Spend, claims and rate imports: 1 per key, 2 in all, so their staging keeps its pace (each takes at most a third
    /// of the writer).
    let imports: HeavyRequestLimiter

    /// The documented limits.
    package init() {
        self.init(export: HeavyRequestLimiter(kind: "export", perKey: 2, total: 16),
                  report: HeavyRequestLimiter(kind: "report", perKey: 4, total: 8),
                  reconcile: HeavyRequestLimiter(kind: "reconcile", perKey: 1, total: 2),
                  imports: HeavyRequestLimiter(kind: "import", perKey: 1, total: 2))
    }

    init(export: HeavyRequestLimiter, report: HeavyRequestLimiter, reconcile: HeavyRequestLimiter,
         imports: HeavyRequestLimiter = HeavyRequestLimiter(kind: "import", perKey: 1, total: 2)) {
        self.export = export
        self.report = report
        self.reconcile = reconcile
        self.imports = imports
    }

    /// Every limiter, for ``MemoryTrimmer``.
    var all: [HeavyRequestLimiter] { [export, report, reconcile, imports] }
}
