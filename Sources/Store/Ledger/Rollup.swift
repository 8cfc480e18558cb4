/// The SQL that keeps `conversion_rollup`: its columns, one postback's contribution, and the batch fold.
enum Rollup {
    /// The key: NULL dimensions are stored as '' or -1 so the unique key treats them as equal.
    static let key = [
        "day", "app", "ad_network_id", "protocol", "outcome", "environment", "countable", "source_digits", "digit_count",
        "conversion_type", "conversion_class", "conversion_window", "did_win", "interaction", "country", "tier_min", "currency",
    ]
    /// The sums kept per key; revenue in whole millionths of its currency, so sums are exact.
    static let sums = ["postbacks", "events", "revenue_min_micros", "revenue_max_micros", "without_value", "duplicates", "replays"]
    static let columns = key + sums

    /// Postbacks the rollup counts.
    static func counted(_ row: String) -> String { "\(row).outcome IN ('verified', 'unverifiable')" }

    /// One postback's key and sums, reading the postbacks row `row`.
    static func values(row p: String) -> [String] {
        [
            "substr(\(p).received_at, 1, 10)", "\(p).advertised_item_id", "\(p).ad_network_id", "\(p).protocol", "\(p).outcome",
            "coalesce(\(p).environment, '')", "\(p).countable", "coalesce(\(p).source_digits, '')", "coalesce(\(p).digit_count, -1)",
            "\(p).conversion_type", "coalesce(\(p).conversion_class, '')", "\(p).conversion_window", "\(p).did_win",
            "coalesce(\(p).interaction, '')", "coalesce(\(p).country_code, '')", "\(p).tier_min", "coalesce(\(p).currency, '')",
            "1", "\(p).event_count", Money.micros("\(p).revenue_min"), Money.micros("\(p).revenue_max"),
            "CASE WHEN \(p).conversion_value IS NULL AND \(p).coarse_value IS NULL THEN 1 ELSE 0 END", "\(p).duplicates", "\(p).replays",
        ]
    }

    static let upsert = "ON CONFLICT (\(key.joined(separator: ", "))) DO UPDATE SET "
        + sums.map { "\($0) = conversion_rollup.\($0) + excluded.\($0)" }.joined(separator: ", ")

    /// `INSERT ... SELECT` of the summed contributions of the rows of `source` (aliased `p`).
    static func insert(from source: String, where condition: String) -> String {
        let contribution = values(row: "p")
        let selected = contribution.prefix(key.count) + contribution.dropFirst(key.count).map { "sum(\($0))" }
        return "INSERT INTO conversion_rollup (\(columns.joined(separator: ", "))) SELECT \(selected.joined(separator: ", ")) "
            + "FROM \(source) p WHERE \(condition) AND \(counted("p")) "
            + "GROUP BY \(keyPositions) ORDER BY \(keyPositions) \(upsert)"
    }

    /// The key's positions in a select list, `1, 2, ...`: the fold groups by them, and upserts in their order (the
    /// order every PostgreSQL transaction takes rollup rows in, see ``postgresLockForCopies``).
    private static let keyPositions = (1...key.count).map(String.init).joined(separator: ", ")

    /// PostgreSQL: locks, in key order, the rollup rows of the postbacks `?` (an array of ids). A copy's counters move
    /// its folded postback's rollup row (through the `conversion_rollup_follow` trigger); two commits (of one
    /// receiver's two commit threads then, of two receivers now) doing so in the order their postbacks came in took the
    /// same rows in opposite orders and deadlocked (PostgreSQL broke each deadlock after its `deadlock_timeout`, a
    /// second, and the batch ran again). Taken in one order, as the fold takes
    /// them, they only wait. A postback still listed in `rollup_pending` moves no rollup row (the trigger leaves it to
    /// the fold), so its key is not locked: a copy of a fresh postback would otherwise wait for a fold holding the same
    /// busy keys, for nothing. The copy holds its postbacks' rows (`FOR UPDATE`) by then, and a fold deletes from
    /// `rollup_pending` only the ids of rows it has locked, so what this statement finds pending stays pending until the
    /// copy commits.
    static let postgresLockForCopies: String = {
        let rollupKey = key.map { "r." + $0 }.joined(separator: ", ")
        return "SELECT 1 FROM conversion_rollup r WHERE (\(rollupKey)) IN (SELECT \(values(row: "p").prefix(key.count).joined(separator: ", ")) "
            + "FROM postbacks p WHERE p.id = ANY(?::bigint[]) AND \(counted("p")) "
            + "AND NOT EXISTS (SELECT 1 FROM rollup_pending q WHERE q.id = p.id)) ORDER BY \(rollupKey) FOR UPDATE OF r"
    }()

    /// SQLite: folds the counted postbacks with ids in (?, ?]. One writer assigns ids in commit order, so a high-water
    /// mark (`rollup_state.folded_through`) says what is folded.
    static let sqliteFold = insert(from: "postbacks", where: "p.id > ? AND p.id <= ?")

    /// PostgreSQL: folds up to ? rows listed in `rollup_pending`, oldest first, and deletes their pending ids, in one
    /// statement; returns how many. Receivers commit ids out of order, so new rows are listed, not found by a high-water
    /// mark; rows another transaction holds are skipped and folded next time. The pending ids are taken first, as an array, and
    /// the rows looked up by id: as a join, the planner (misled by the churning table's statistics) merged the pending ids
    /// with a scan of every postback, 30 ms a fold at 60,000 rows.
    static let postgresFold = """
        WITH batch AS (
            SELECT p.* FROM postbacks p WHERE p.id = ANY (ARRAY(SELECT id FROM rollup_pending ORDER BY id LIMIT ?::bigint)) FOR UPDATE SKIP LOCKED
        ), gone AS (DELETE FROM rollup_pending WHERE id = ANY (ARRAY(SELECT id FROM batch))),
        folded AS (\(insert(from: "batch", where: "true")) RETURNING 1)
        SELECT count(*) FROM batch
        """
}

/// The report rollup: new postbacks folded in batches (reports read `conversion_rollup_live`, which adds the rows not
/// yet folded, so they are exact either way).
public struct ReportRollup: Sendable {
    let engine: any DatabaseEngine

    /// Folds postbacks not yet in `conversion_rollup` into it, at most `limit` rows' worth, oldest first, in one
    /// transaction; returns how many it got through (0 when there was nothing to fold, or another receiver is folding).
    /// It blocks the calling thread: the commit thread and tools call it.
    @discardableResult
    public func fold(limit: Int64 = .max) throws -> Int64 {
        try engine.transaction { db in
            switch db.dialect {
            case .sqlite:
                let folded = try db.value("SELECT folded_through FROM rollup_state", as: Int64.self) ?? 0
                guard let last = try db.value("SELECT max(id) FROM postbacks", as: Int64.self), last > folded else { return 0 }
                let through = limit >= last - folded ? last : folded + limit
                try db.execute(Rollup.sqliteFold, [folded, through])
                try db.execute("UPDATE rollup_state SET folded_through = ?", [through])
                return through - folded
            case .postgres:
                // One receiver folds at a time; the others skip rather than wait.
                // Both statements run every few commits under load, so they are prepared.
                let locked = try db.rows("SELECT pg_try_advisory_xact_lock(?::bigint)", [PostgresMigrations.lockKey + 1], reuse: .prepared)
                guard try locked.first?.get(at: 0, as: Bool.self) == true else { return 0 }
                return try db.rows(Rollup.postgresFold, [limit], reuse: .prepared).first?.get(at: 0, as: Int64.self) ?? 0
            }
        }
    }
}
