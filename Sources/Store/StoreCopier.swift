import Foundation

/// Copies one store into another, table by table with the same ids (an SQLite installation into PostgreSQL, say), and
/// checks that the two then agree. Safe to run again: rows the target already has are left as they are.
public struct StoreCopier: Sendable {
    /// The tables copied, parents before children. The rollup is not copied: the target folds the copied postbacks.
    /// Tables with an `id` are copied in chunks of ids; the others (registries, small by nature) in chunks by position.
    public static let tables = ["receipts", "postbacks", "postback_events", "schemas", "api_keys", "attribution_records", "adservices_jobs",
                                "apps", "ad_networks", "source_names", "apple_ads_names", "forward_rules", "forward_outbox", "forward_templates", "forward_secrets",
                                "advertisers", "advertiser_apps", "source_mappings", "alert_rules", "alert_outbox",
                                "spend_imports", "spend", "spend_current", "exchange_rates", "arrivals_daily"]

    /// What one run did.
    public struct Summary: Sendable, Equatable {
        /// Rows added to the target, per table.
        public var copied: [String: Int] = [:]
        /// Rows the target already had, per table.
        public var alreadyThere: [String: Int] = [:]
    }

    /// A difference found by ``check(source:target:)``.
    public struct Difference: Sendable, Equatable, CustomStringConvertible {
        /// What was compared.
        public let what: String
        /// The source's answer and the target's.
        public let source: String
        public let target: String
        public var description: String { "\(what): source \(source), target \(target)" }
    }

    let source: StoreDatabase
    let target: StoreDatabase

    /// A copier from `source` into `target`.
    public init(source: StoreDatabase, target: StoreDatabase) {
        self.source = source
        self.target = target
    }

    /// Copies every table in chunks of ids, one target transaction per chunk; `progress(table, done, total)` after each.
    /// Then folds the copied postbacks into the target's rollup and, on PostgreSQL, analyses the tables: without
    /// statistics its planner takes a freshly filled table for empty and scans every postback for a 30-day report.
    public func copy(progress: @Sendable (String, Int, Int) -> Void) throws -> Summary {
        var summary = Summary()
        for table in Self.tables {
            let columns = try sharedColumns(table)
            let paged = columns.first == "id"
            let total = try source.engine.snapshot { try $0.value("SELECT count(*) FROM \(table)", as: Int.self) } ?? 0
            // PostgreSQL takes at most 65,535 arguments a statement.
            let chunk = max(1, 30_000 / columns.count)
            var after: Int64 = -1
            var done = 0
            while true {
                let rows = try source.engine.snapshot { db in
                    paged ? try db.rows("SELECT \(columns.joined(separator: ", ")) FROM \(table) WHERE id > ? ORDER BY id LIMIT ?", [after, chunk])
                        : try db.rows("SELECT \(columns.joined(separator: ", ")) FROM \(table) ORDER BY \((1...columns.count).map(String.init).joined(separator: ", ")) LIMIT ? OFFSET ?", [chunk, done])
                }
                guard let last = rows.last else { break }
                if paged { after = try last.get("id", as: Int64.self) }
                let placeholders = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
                var sql = "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES "
                    + Array(repeating: placeholders, count: rows.count).joined(separator: ", ")
                    // The import in force moves on: a copy made again follows the source's, or the target's next
                    // import would delete the rows the source shows as current.
                    + (table == "spend_current" ? " ON CONFLICT (day, app, ad_network_id) DO UPDATE SET import_id = excluded.import_id" : " ON CONFLICT DO NOTHING")
                // On PostgreSQL new postbacks are listed for the rollup as they go in (see Rollup.postgresFold).
                if table == "postbacks", target.engine.dialect == .postgres {
                    sql = "WITH copied AS (\(sql) RETURNING id) INSERT INTO rollup_pending (id) SELECT id FROM copied"
                }
                let arguments: [any SQLValueConvertible] = rows.flatMap(\.values)
                let inserted = try target.engine.transaction { db in try db.execute(sql, arguments) }
                summary.copied[table, default: 0] += inserted
                summary.alreadyThere[table, default: 0] += rows.count - inserted
                done += rows.count
                progress(table, done, total)
            }
            try target.engine.transaction { db in
                // The next id the target hands out follows the copied ones.
                if db.dialect == .postgres, paged {
                    try db.execute("SELECT setval(pg_get_serial_sequence('\(table)', 'id'), greatest((SELECT max(id) FROM \(table)), 1))")
                }
            }
        }
        while try target.rollup.fold(limit: 50_000) > 0 {}
        if target.engine.dialect == .postgres { try target.engine.transaction { db in _ = try db.execute("ANALYZE") } }
        return summary
    }

    /// Compares row counts of every table and the report totals by day, app and network, and by campaign and window.
    /// Returns the differences; none means the copy is complete.
    public func check() async throws -> [Difference] {
        var differences: [Difference] = []
        for table in Self.tables {
            let count = "SELECT count(*) FROM \(table)"
            let inSource = try await source.engine.read { try $0.value(count, as: Int.self) } ?? 0
            let inTarget = try await target.engine.read { try $0.value(count, as: Int.self) } ?? 0
            if inSource != inTarget { differences.append(Difference(what: "\(table) rows", source: String(inSource), target: String(inTarget))) }
        }
        var everything = ReportQuery()
        everything.includeUncounted = true
        everything.groupBy = [.day, .app, .adNetwork, .environment]
        var events = ReportQuery()
        events.groupBy = [.campaign, .window, .event]
        for query in [everything, events] {
            let fromSource = try await source.reports.report(query)
            let fromTarget = try await target.reports.report(query)
            if fromSource.rows != fromTarget.rows {
                let grouping = query.groupBy.map(\.rawValue).joined(separator: ",")
                differences.append(Difference(what: "report by \(grouping)", source: "\(fromSource.rows.count) rows", target: "\(fromTarget.rows.count) rows"))
            }
        }
        return differences
    }

    /// The columns both stores have for `table`, `id` first when it has one.
    private func sharedColumns(_ table: String) throws -> [String] {
        let sourceColumns = try source.engine.snapshot { try Self.columns(of: table, $0) }
        let targetColumns = Set(try target.engine.snapshot { try Self.columns(of: table, $0) })
        let shared = sourceColumns.filter(targetColumns.contains)
        return shared.contains("id") ? ["id"] + shared.filter { $0 != "id" } : shared
    }

    private static func columns(of table: String, _ db: any SQLSession) throws -> [String] {
        let sql = db.dialect == .sqlite
            ? "SELECT name FROM pragma_table_info(?) ORDER BY cid"
            : "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND table_schema = current_schema() ORDER BY ordinal_position"
        return try db.rows(sql, [table]).map { try $0.get(at: 0, as: String.self) }
    }
}
