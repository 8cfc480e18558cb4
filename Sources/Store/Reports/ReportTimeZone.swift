import Foundation
import Postback

/// The time zone a report counts its days and weeks in (an IANA name; UTC by default), and the SQL for a local day.
public struct ReportTimeZone: Sendable, Equatable {
    /// The zone.
    public let zone: TimeZone
    /// The name it was asked for, which reports state.
    public let identifier: String

    /// UTC, the default.
    public static let utc = ReportTimeZone(identifier: "UTC")!

    /// The zone named `identifier`, an IANA area/location name spelled exactly (`Europe/Berlin`, `America/New_York`,
    /// `Asia/Kolkata`) or `UTC`; nil for anything else (abbreviations such as `CET`, offsets such as `+02:00`).
    /// docs/openapi.yaml lists every name the tz database of this system gives (`TimeZone` there).
    public init?(identifier: String) {
        guard let zone = TimeZone(identifier: identifier),
              identifier == "UTC" || (identifier.contains("/") && zone.identifier == identifier) else { return nil }
        self.zone = zone
        self.identifier = identifier
    }

    public static func == (left: ReportTimeZone, right: ReportTimeZone) -> Bool { left.identifier == right.identifier }

    /// Whether local days are UTC days over the period reports cover, so the UTC rollup can answer.
    var isUTC: Bool { Self.offsets(zone, from: Self.earliest, to: Self.latest).allSatisfy { $0.offset == 0 } }

    /// Reports' period when the query gives no bound: from before any postback Apple sends to well after today.
    static let earliest = Date(timeIntervalSince1970: 1_420_070_400)  // 2015-01-01
    static var latest: Date { Date().addingTimeInterval(400 * 86_400) }

    /// The offset from UTC in force from each instant on, over `from..<to`: the first entry is in force at `from`.
    static func offsets(_ zone: TimeZone, from: Date, to: Date) -> [(start: Date, offset: Int)] {
        var offsets = [(start: from, offset: zone.secondsFromGMT(for: from))]
        var cursor = from
        // Two changes a year at most in any zone; the bound only guards against a zone database that never ends.
        while offsets.count < 1_000, let next = zone.nextDaylightSavingTimeTransition(after: cursor), next < to {
            let offset = zone.secondsFromGMT(for: next)
            if offset != offsets.last?.offset { offsets.append((next, offset)) }
            cursor = next
        }
        return offsets
    }

    /// SQL for the local `YYYY-MM-DD` day of `timestamp` (a column of UTC ISO 8601 text), exact for instants from
    /// `from` to `to` (nil: the reports' whole period); each clock change is one branch of a CASE.
    func day(of timestamp: String, from: Date?, to: Date?, dialect: SQLDialect) -> String {
        let offsets = Self.offsets(zone, from: from ?? Self.earliest, to: to ?? Self.latest)
        guard offsets.count > 1 else { return dialect.day(of: timestamp, shiftedBy: offsets[0].offset) }
        var branches = ""
        for (index, change) in offsets.enumerated().dropFirst() {
            branches += " WHEN \(timestamp) < '\(Timestamp.format(change.start))' THEN \(dialect.day(of: timestamp, shiftedBy: offsets[index - 1].offset))"
        }
        return "CASE\(branches) ELSE \(dialect.day(of: timestamp, shiftedBy: offsets[offsets.count - 1].offset)) END"
    }
}
