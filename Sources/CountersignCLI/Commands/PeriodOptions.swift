import CountersignServer
import ArgumentParser
import Foundation
import Postback
import Store

/// The period of `report` and `performance`: `--from`, `--to` (excluded) and `--last`, in ISO 8601 or relative to
/// today in the report's time zone (`today`, `yesterday`, `7d` or `-7d` for seven days ago, `4w` for four weeks ago).
struct PeriodOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: "The start: ISO 8601 (without a zone, in --tz), or today, yesterday, 7d (7 days ago), 4w.")
    var from: String?
    @Option(parsing: .unconditional, help: "The end, excluded: ISO 8601 or as --from (--to today ends before today).")
    var to: String?
    @Option(help: "The last N days with today (7d, 30d, 4w); instead of --from and --to.")
    var last: String?

    /// The report's zone for one registered `app` when `tz` names none (`tz` pair), then the `from` and `to` pairs with
    /// relative dates resolved today in the zone that applies (`tz`, else the app's, else UTC).
    /// An app Countersign does not know at all (not registered, nothing received or imported) is refused: its report
    /// would be an empty table that looks like a real answer.
    func pairs(tz: String?, app: String?, store: StoreDatabase) async throws -> [(String, String)] {
        if let app, let id = AppID(app), try await !store.apps.isKnown(id) {
            throw CLIFailure.rejected("app \(app) is not registered and nothing was received or imported for it; countersign apps list shows the apps")
        }
        let appZone = if tz == nil, let app = app.flatMap({ AppID($0) }) { try await store.apps.timeZone(app: app) } else { String?.none }
        let zone = TimeZone(identifier: tz ?? appZone ?? "UTC") ?? .gmt
        let resolved = try pairs(now: Date(), zone: zone)
        if let note = note(resolved, zone: zone) { FileHandle.standardError.write(Data("countersign: \(note)\n".utf8)) }
        return (appZone.map { [("tz", $0)] } ?? []) + resolved
    }

    /// The line that names the days a relative period resolved to (`resolved`, from ``pairs(now:zone:)``), with their
    /// weekdays and `zone`, the last day included; nil when every date was written out. `--last` in weeks counts back
    /// from today, so it says when the period does not start on a Monday.
    func note(_ resolved: [(String, String)], zone: TimeZone) -> String? {
        guard last != nil || [from, to].contains(where: { $0.map(RelativeDay.isRelative) ?? false }) else { return nil }
        func named(_ day: String) -> String { RelativeDay.weekday(day).map { "\($0) \(day)" } ?? day }
        let start = resolved.first { $0.0 == "from" }?.1
        // `to` is excluded: a date's last day is the day before it; a time is shown as given.
        let end = resolved.first { $0.0 == "to" }.map { to in
            to.1.count == 10 ? Timestamp.parse(to.1, assuming: .gmt).map { RelativeDay.day(-1, from: $0, zone: .gmt) } ?? to.1 : "before \(to.1)"
        }
        var text = switch (start, end) {
        case let (start?, end?): "period: \(named(start)) to \(named(end))"
        case let (start?, nil): "period: from \(named(start))"
        case let (nil, end?): "period: up to \(named(end))"
        case (nil, nil): "period: every day"
        }
        text += " in \(zone.identifier == "GMT" ? "UTC" : zone.identifier)"
        if let last, let days = RelativeDay.days(last) {
            text += " (\(days) days with today"
            if last.lowercased().hasSuffix("w"), let start, RelativeDay.weekday(start) != "Mon" {
                text += "; \(last) counts back from today, not calendar weeks: --from with a Monday gives whole weeks"
            }
            text += ")"
        }
        return text
    }

    /// The `from` and `to` query pairs, relative dates resolved on `now` in `zone`; a one-line usage error for a
    /// `--last` that is not a count of days or weeks, or that comes with `--from` or `--to`.
    func pairs(now: Date, zone: TimeZone) throws(CLIFailure) -> [(String, String)] {
        if let last {
            guard from == nil, to == nil else { throw CLIFailure.usage("--last replaces --from and --to; give one or the other") }
            guard let period = RelativeDay.last(last, now: now, zone: zone) else { throw CLIFailure.usage("--last takes a number of days or weeks, such as 7d, 30d or 4w") }
            return [("from", period.from), ("to", period.to)]
        }
        var pairs: [(String, String)] = []
        if let from { pairs.append(("from", RelativeDay.resolve(from, now: now, zone: zone) ?? from)) }
        if let to { pairs.append(("to", RelativeDay.resolve(to, now: now, zone: zone) ?? to)) }
        if pairs.count == 2, let start = Timestamp.parse(pairs[0].1, assuming: zone), let end = Timestamp.parse(pairs[1].1, assuming: zone), end <= start {
            throw CLIFailure.usage("--to (\(pairs[1].1)) is not after --from (\(pairs[0].1)), so the range holds nothing; --to is excluded: --from 2026-11-01 --to 2026-11-02 is one day")
        }
        return pairs
    }
}
