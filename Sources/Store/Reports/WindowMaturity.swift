import Foundation

/// Whether a conversion window's postbacks can still land on a span of report days (docs/metrics.md, "Maturity"):
/// the install day of a window k postback is its arrival less ``lagHours``[k] (``earliestLagHours``[k] for SKAdNetwork
/// before 4.0), so window k adds to a day from that many hours after the day begins until that many after it ends.
public enum WindowMaturity: String, Sendable, CaseIterable {
    /// None of the window's postbacks for these days can have arrived yet.
    case notDue = "not_due"
    /// Some may have arrived, and more may come.
    case inFlight = "in_flight"
    /// None more can come: the window's figures for these days are final.
    case closed

    /// Hours the estimated install time lies before the arrival of a window 0, 1 and 2 postback, as the views'
    /// `estimated_install_at` subtracts them: the most, which says when a window has closed.
    public static let lagHours = [84, 252, 924]
    /// The fewest hours subtracted in each window, which say when its first postbacks can land: SKAdNetwork before 4.0
    /// subtracts 36 hours, inside window 0.
    public static let earliestLagHours = [36, 252, 924]

    /// The maturity of `window` over the days from `firstDayStart` to `lastDayEnd` at `now`; on the arrival basis a
    /// day is closed once it ends.
    public static func of(window: Int, firstDayStart: Date, lastDayEnd: Date, now: Date, installBasis: Bool) -> WindowMaturity {
        let (latest, earliest) = installBasis ? (TimeInterval(lagHours[window] * 3600), TimeInterval(earliestLagHours[window] * 3600)) : (0, 0)
        if now >= lastDayEnd.addingTimeInterval(latest) { return .closed }
        if now < firstDayStart.addingTimeInterval(earliest) { return .notDue }
        return .inFlight
    }
}
