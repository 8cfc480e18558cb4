import GRDB

/// The SQL that keeps `conversion_rollup`: its columns, one postback's contribution, and the batch fold.
enum Rollup {
    /// The key: NULL dimensions are stored as '' or -1 so the unique key treats them as equal.
    static let key = [
        "day", "app", "ad_network_id", "protocol", "outcome", "environment", "countable", "source_digits", "digit_count",
        "conversion_type", "conversion_class", "conversion_window", "did_win", "interaction", "country", "tier_min",
    ]
    /// The sums kept per key.
    static let sums = ["postbacks", "events", "revenue_min", "revenue_max", "without_value", "duplicates", "replays"]
    static let columns = key + sums

    /// Postbacks the rollup counts.
    static func counted(_ row: String) -> String { "\(row).outcome IN ('verified', 'unverifiable')" }

    /// One postback's key and sums, reading the postbacks row `row` (an alias, or NEW / OLD in a trigger).
    static func values(row p: String) -> [String] {
        [
            "substr(\(p).received_at, 1, 10)", "\(p).advertised_item_id", "\(p).ad_network_id", "\(p).protocol", "\(p).outcome",
            "coalesce(\(p).environment, '')", "\(p).countable", "coalesce(\(p).source_digits, '')", "coalesce(\(p).digit_count, -1)",
            "\(p).conversion_type", "coalesce(\(p).conversion_class, '')", "\(p).conversion_window", "\(p).did_win",
            "coalesce(\(p).interaction, '')", "coalesce(\(p).country_code, '')", "\(p).tier_min",
            "1", "\(p).event_count", "coalesce(\(p).revenue_min, 0)", "coalesce(\(p).revenue_max, 0)",
            "(\(p).conversion_value IS NULL AND \(p).coarse_value IS NULL)", "\(p).duplicates", "\(p).replays",
        ]
    }

    static let upsert = "ON CONFLICT (\(key.joined(separator: ", "))) DO UPDATE SET "
        + sums.map { "\($0) = \($0) + excluded.\($0)" }.joined(separator: ", ")

    /// Folds the counted postbacks with ids in (?, ?] into the rollup, one upsert per key.
    static let fold: String = {
        let contribution = values(row: "p")
        let selected = contribution.prefix(key.count) + contribution.dropFirst(key.count).map { "sum(\($0))" }
        return "INSERT INTO conversion_rollup (\(columns.joined(separator: ", "))) SELECT \(selected.joined(separator: ", ")) "
            + "FROM postbacks p WHERE p.id > ? AND p.id <= ? AND \(counted("p")) "
            + "GROUP BY \((1...key.count).map(String.init).joined(separator: ", ")) \(upsert)"
    }()
}

/// The report rollup: new postbacks folded in batches (reports read `conversion_rollup_live`, which adds the rows not
/// yet folded, so they are exact either way).
public struct ReportRollup: Sendable {
    let pool: DatabasePool

    /// Folds postbacks not yet in `conversion_rollup` into it, at most `limit` ids' worth, oldest first, in one
    /// transaction; returns how many ids it got through (0 when there was nothing to fold). It blocks the calling
    /// thread: the commit thread and tools call it.
    @discardableResult
    public func fold(limit: Int64 = .max) throws -> Int64 {
        try pool.write { db in
            let folded = try Int64.fetchOne(db, sql: "SELECT folded_through FROM rollup_state") ?? 0
            guard let last = try Int64.fetchOne(db, sql: "SELECT max(id) FROM postbacks"), last > folded else { return 0 }
            let through = limit >= last - folded ? last : folded + limit
            try db.cachedStatement(sql: Rollup.fold).execute(arguments: [folded, through])
            try db.cachedStatement(sql: "UPDATE rollup_state SET folded_through = ?").execute(arguments: [through])
            return through - folded
        }
    }
}
