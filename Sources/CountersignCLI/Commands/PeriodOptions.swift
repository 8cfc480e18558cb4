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
        return (appZone.map { [("tz", $0)] } ?? []) + (try pairs(now: Date(), zone: zone))
    }

    /// The `from` and `to` query pairs, relative dates resolved on `now` in `zone`; a one-line usage error for a
    /// `--last` that is not a count of days or weeks, or that comes with `--from` or `--to`.
    func pairs(now: Date, zone: TimeZone) throws(CLIFailure) -> [(String, String)] {
        if let last {
            guard from == nil, to == nil else { throw CLIFailure.usage("--last replaces --from and --to; give one or the other") }
            guard let days = RelativeDay.days(last), days > 0 else { throw CLIFailure.usage("--last takes a number of days or weeks, such as 7d, 30d or 4w") }
            return [("from", RelativeDay.day(-(days - 1), from: now, zone: zone)), ("to", RelativeDay.day(1, from: now, zone: zone))]
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

/// Days relative to today: the words and counts the CLI's date options take.
enum RelativeDay {
    /// `text` as an ISO date (`2026-11-24`) when it names a day relative to `now` in `zone`: `today`, `yesterday`,
    /// `7d` or `-7d` (seven days ago), `4w` or `-4w` (four weeks ago); nil for anything else (an ISO date, a typo).
    static func resolve(_ text: String, now: Date, zone: TimeZone) -> String? {
        switch text.lowercased() {
        case "today": return day(0, from: now, zone: zone)
        case "yesterday": return day(-1, from: now, zone: zone)
        default:
            let count = text.hasPrefix("-") ? String(text.dropFirst()) : text
            guard let days = days(count) else { return nil }
            return day(-days, from: now, zone: zone)
        }
    }

    /// The days in `7d` or `4w`; nil otherwise (a bare number is a year or a typo, never a count of days).
    static func days(_ text: String) -> Int? {
        guard let unit = text.last, unit.isLetter else { return nil }
        let digits = text.dropLast()
        guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ ("0"..."9").contains($0) }), let count = Int(digits) else { return nil }
        switch unit {
        case "d", "D": return count
        case "w", "W": return count * 7
        default: return nil
        }
    }

    /// The ISO date `offset` days from `now`'s day in `zone`.
    static func day(_ offset: Int, from now: Date, zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let day = calendar.date(byAdding: .day, value: offset, to: calendar.startOfDay(for: now)) ?? now
        let parts = calendar.dateComponents([.year, .month, .day], from: day)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
