/// Which day a postback counts on in a report: the estimated day of the install it reports, or the day it arrived
/// (docs/metrics.md, Days). Reports name theirs as `day_basis`.
public enum DayBasis: String, Sendable, CaseIterable {
    /// The estimated day of the install it reports (docs/metrics.md): cohorts, comparable with the network's days.
    case install
    /// The day it arrived.
    case arrival

    /// How a table's footnote names it.
    public var phrase: String { self == .install ? "by estimated install day" : "by arrival day" }
}
