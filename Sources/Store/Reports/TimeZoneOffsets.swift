import Foundation
import Postback

/// The UTC offsets of the time zones apps report in, kept in `time_zone_offsets` for SQLite's views: SQLite has no time
/// zone database, so `conversions.local_day` looks up the offset in force at each postback's time there. PostgreSQL's
/// views use `AT TIME ZONE` instead. Written when an app's zone is registered, and at start for zones registered before.
enum TimeZoneOffsets {
    /// The years the table covers.
    static let from = Date(timeIntervalSince1970: 1_420_070_400)  // 2015-01-01
    static let to = Date(timeIntervalSince1970: 2_240_524_800)  // 2041-01-01

    /// Writes the offsets of `zone` unless they are there (SQLite only).
    static func ensure(_ db: any SQLSession, zone identifier: String) throws {
        guard db.dialect == .sqlite, identifier != "UTC", let zone = TimeZone(identifier: identifier),
              try db.value("SELECT count(*) FROM time_zone_offsets WHERE time_zone = ?", [identifier], as: Int.self) == 0 else { return }
        for change in ReportTimeZone.offsets(zone, from: from, to: to) {
            try db.execute("INSERT INTO time_zone_offsets (time_zone, valid_from, offset_seconds) VALUES (?, ?, ?)",
                           [identifier, change.start == from ? "0000" : Timestamp.format(change.start), change.offset])
        }
    }

    /// The registered zones without offsets yet (SQLite only).
    static func missing(_ db: any SQLSession) throws -> [String] {
        guard db.dialect == .sqlite else { return [] }
        return try db.rows("""
            SELECT DISTINCT time_zone FROM apps
            WHERE time_zone IS NOT NULL AND time_zone <> 'UTC' AND time_zone NOT IN (SELECT time_zone FROM time_zone_offsets)
            """, []).map { try $0.get(at: 0, as: String.self) }
    }
}
