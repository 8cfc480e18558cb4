import Foundation
import JWS
import Postback

/// What a rule remembers between checks, and the alert a new reading makes: one when the condition starts to hold,
/// one when it stops, and one digest a day. Pure; ``AlertBook`` applies it under a compare-and-set, so receivers that
/// check together queue each alert once.
public struct AlertTransition: Sendable, Equatable {
    /// The rule's remembered state.
    public struct State: Sendable, Equatable {
        /// Whether the condition held at the last check, and since when (ISO 8601 UTC).
        public var firing: Bool
        public var since: String?
        /// The last day a digest was queued for.
        public var lastDigestDay: String?

        public init(firing: Bool = false, since: String? = nil, lastDigestDay: String? = nil) {
            self.firing = firing
            self.since = since
            self.lastDigestDay = lastDigestDay
        }
    }

    /// The state after `reading` of `rule` at `now`, and the alert it makes (nil when nothing changed).
    public static func after(_ reading: AlertReading, rule: AlertRule, state: State, now: Date) -> (State, AlertEvent?) {
        switch (state.firing, reading.firing) {
        case (false, true):
            let since = Timestamp.format(now)
            return (State(firing: true, since: since, lastDigestDay: state.lastDigestDay),
                    AlertEvent(rule: rule.name, kind: rule.kind, state: .firing, key: "firing:\(since)", at: now, summary: reading.summary, figures: reading.figures))
        case (true, false):
            return (State(firing: false, since: nil, lastDigestDay: state.lastDigestDay),
                    AlertEvent(rule: rule.name, kind: rule.kind, state: .resolved, key: "resolved:\(state.since ?? "")", at: now,
                               summary: reading.summary, figures: reading.figures))
        default:
            return (state, nil)
        }
    }

    /// The days a digest is due for at `now`, oldest first: none before the rule's hour; then yesterday (in the rule's
    /// zone, `YYYY-MM-DD`) and the days since `lastDigestDay` that were missed (no receiver checked at their hour), at
    /// most ``mostDaysCaughtUp``.
    public static func digestDays(rule: AlertRule, lastDigestDay: String?, now: Date) -> [String] {
        guard let zone = ReportTimeZone(identifier: rule.timeZone)?.zone else { return [] }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard calendar.component(.hour, from: now) >= rule.hour else { return [] }
        var days: [String] = []
        var back = 1
        while back <= mostDaysCaughtUp, let date = calendar.date(byAdding: .day, value: -back, to: now) {
            let day = Self.day(date, calendar)
            guard lastDigestDay.map({ $0 < day }) ?? (back == 1) else { break }
            days.insert(day, at: 0)
            back += 1
        }
        return days
    }

    /// The most missed days a digest catches up on.
    public static let mostDaysCaughtUp = 7

    private static func day(_ date: Date, _ calendar: Calendar) -> String {
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

    /// Yesterday in `zone` at `now`, `YYYY-MM-DD`.
    public static func yesterday(in zone: TimeZone, now: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return day(calendar.date(byAdding: .day, value: -1, to: now) ?? now, calendar)
    }
}
