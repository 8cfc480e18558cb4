import Foundation
import Postback

/// Days relative to today: the words and counts the CLI's date options and the API's `last` take.
public enum RelativeDay {
    /// `text` as an ISO date (`2026-11-24`) when it names a day relative to `now` in `zone`: `today`, `yesterday`,
    /// `7d` or `-7d` (seven days ago), `4w` or `-4w` (four weeks ago); nil for anything else (an ISO date, a typo).
    public static func resolve(_ text: String, now: Date, zone: TimeZone) -> String? {
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
    public static func days(_ text: String) -> Int? {
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
    public static func day(_ offset: Int, from now: Date, zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let day = calendar.date(byAdding: .day, value: offset, to: calendar.startOfDay(for: now)) ?? now
        let parts = calendar.dateComponents([.year, .month, .day], from: day)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }

    /// Whether `text` names a day relative to today (`today`, `7d`, `-4w`) rather than a written date.
    public static func isRelative(_ text: String) -> Bool {
        resolve(text, now: Date(timeIntervalSince1970: 0), zone: .gmt) != nil
    }

    /// The weekday of an ISO date (`2026-11-30`) in English, three letters (`Mon`); nil for a date that is not one.
    public static func weekday(_ isoDay: String) -> String? {
        guard isoDay.count == 10, let date = Timestamp.parse(isoDay, assuming: .gmt) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        return ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][calendar.component(.weekday, from: date) - 1]
    }

    /// The longest `last` period, in days (about 27 years).
    public static let maximumLast = 9999

    /// The `from` and `to` days of the last `text` (`7d`, `4w`) up to and including today in `zone`: `to` is tomorrow,
    /// as `to` is excluded. Nil for anything else.
    public static func last(_ text: String, now: Date, zone: TimeZone) -> (from: String, to: String)? {
        let digits = text.dropLast()
        guard let unit = text.last, digits.first != "0", digits.count <= ("wW".contains(unit) ? 3 : 4),
              let days = days(text), (1...maximumLast).contains(days) else { return nil }
        return (day(-(days - 1), from: now, zone: zone), day(1, from: now, zone: zone))
    }
}
