/// The SQL that differs between SQLite and PostgreSQL, in one place. Everything else is written once for both.
public enum SQLDialect: String, Sendable {
    case sqlite
    case postgres

    /// The ISO 8601 week of a `YYYY-MM-DD` text day as `2026-W48`. Weeks start on Monday; 2027-01-03 is in 2026-W53.
    func isoWeek(_ day: String) -> String {
        switch self {
        case .sqlite:
            // The week-year and week of that week's Thursday (SQLite before 3.46 has no `%G` or `%V`).
            let thursday = "\(day), (3 - (CAST(strftime('%w', \(day)) AS INTEGER) + 6) % 7) || ' days'"
            return "strftime('%Y', \(thursday)) || '-W' || printf('%02d', (CAST(strftime('%j', \(thursday)) AS INTEGER) - 1) / 7 + 1)"
        case .postgres:
            return "to_char(CAST(\(day) AS date), 'IYYY-\"W\"IW')"
        }
    }

    /// The `YYYY-MM-DD` day of `timestamp` (UTC ISO 8601 text such as `2026-11-01T08:30:00.000Z`) on a clock
    /// `seconds` ahead of UTC.
    func day(of timestamp: String, shiftedBy seconds: Int) -> String {
        guard seconds != 0 else { return "substr(\(timestamp), 1, 10)" }
        return switch self {
        case .sqlite: "substr(datetime(\(timestamp), '\(seconds > 0 ? "+" : "")\(seconds) seconds'), 1, 10)"
        // A timestamp without time zone ignores the text's `Z`, which is what UTC text needs.
        case .postgres: "to_char(CAST(\(timestamp) AS timestamp) + interval '\(seconds) seconds', 'YYYY-MM-DD')"
        }
    }

    /// Member `key` of element `index` of a JSON array held as text, as text.
    /// `timestamp` (UTC ISO 8601 text) `hours` earlier, in the same form.
    func timestamp(_ timestamp: String, hoursBack hours: Int) -> String {
        switch self {
        case .sqlite: "strftime('%Y-%m-%dT%H:%M:%fZ', \(timestamp), '-\(hours) hours')"
        case .postgres: "to_char((CAST(\(timestamp) AS timestamptz) - interval '\(hours) hours') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
        }
    }

    func jsonArrayElementMember(_ json: String, index: Int, key: String) -> String {
        switch self {
        case .sqlite: "json_extract(\(json), '$[\(index)].\(key)')"
        case .postgres: "(CAST(\(json) AS json) -> \(index) ->> '\(key)')"
        }
    }

    /// `value` rounded to `digits` decimals (PostgreSQL rounds only numeric to a number of places).
    func round(_ value: String, _ digits: Int) -> String {
        switch self {
        case .sqlite: "round(\(value), \(digits))"
        case .postgres: "round(CAST(\(value) AS numeric), \(digits))"
        }
    }

    /// Seconds since 1970 as ISO 8601 UTC text with milliseconds, as `Timestamp.format` writes it.
    func isoTime(epochSeconds value: String) -> String {
        switch self {
        case .sqlite: "strftime('%Y-%m-%dT%H:%M:%fZ', \(value), 'unixepoch')"
        case .postgres: "to_char(to_timestamp(\(value)) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
        }
    }

    /// The larger of two values.
    func greatest(_ first: String, _ second: String) -> String {
        switch self {
        case .sqlite: "max(\(first), \(second))"
        case .postgres: "greatest(\(first), \(second))"
        }
    }

    /// An ascending sort term for the output column at `position` computed by `expression`, ordered as SQLite orders it:
    /// NULL first and text by bytes (PostgreSQL would put NULL last and sort text by the database's collation).
    func orderTerm(_ expression: String, position: Int, isText: Bool) -> String {
        switch self {
        case .sqlite: String(position)
        case .postgres: "\(isText ? "(\(expression)) COLLATE \"C\"" : expression) NULLS FIRST"
        }
    }
}
