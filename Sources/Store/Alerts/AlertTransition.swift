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

    /// The day a digest is due for at `now` (yesterday in the rule's zone, `YYYY-MM-DD`), or nil: not before the rule's
    /// hour, and once per day.
    public static func digestDay(rule: AlertRule, lastDigestDay: String?, now: Date) -> String? {
        guard let zone = ReportTimeZone(identifier: rule.timeZone)?.zone else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard calendar.component(.hour, from: now) >= rule.hour else { return nil }
        let day = yesterday(in: zone, now: now)
        guard lastDigestDay.map({ $0 < day }) ?? true else { return nil }
        return day
    }

    /// Yesterday in `zone` at `now`, `YYYY-MM-DD`.
    public static func yesterday(in zone: TimeZone, now: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day], from: calendar.date(byAdding: .day, value: -1, to: now) ?? now)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
