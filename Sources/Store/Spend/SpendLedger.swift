import Foundation
import JWS
import Postback
import Spend

/// Who imported a file, from where, when: kept with every import.
public struct ImportProvenance: Sendable, Equatable {
    /// The API key's name, or the user who ran the CLI.
    public var importedBy: String
    /// The file's name as given (nil when it came without one).
    public var fileName: String?
    /// The layout it was read with.
    public var format: String
    /// SHA-256 of the file's bytes, hex.
    public var sha256: String

    /// A provenance for `bytes`.
    public init(importedBy: String, fileName: String?, format: String, bytes: [UInt8]) {
        self.importedBy = importedBy
        self.fileName = fileName
        self.format = format
        self.sha256 = JWS.sha256(bytes).map { String(format: "%02x", $0) }.joined()
    }
}

/// What one import did.
public struct ImportSummary: Sendable, Equatable {
    /// The import's id (its rows carry it).
    public let id: Int64
    /// Rows written.
    public let rows: Int
    /// Rows of earlier imports it replaced (the same day, app and ad network).
    public let replaced: Int
    /// The first and last day it covers.
    public let firstDay: String
    public let lastDay: String

    /// The summary as JSON, as the CLI and the API show it.
    public var json: JSONObject {
        JSONObject([
            JSONMember(key: "import", value: .number(String(id))), JSONMember(key: "rows", value: .number(String(rows))),
            JSONMember(key: "replaced", value: .number(String(replaced))), JSONMember(key: "first_day", value: .string(firstDay)),
            JSONMember(key: "last_day", value: .string(lastDay)),
        ])
    }
}

/// Spend and claims that networks report, and exchange rates users give: imported whole or not at all, each import with
/// its provenance. A later import of the same day, app and ad network replaces that day's rows, so importing one file
/// twice changes nothing; the measures a file does not carry (cost, claims, impressions, clicks) stay as earlier
/// files gave them, as networks deliver claims and cost in separate exports.
///
/// A spend import never holds the writer for long: its rows are staged beside the rows readers see, ``staging`` a
/// transaction with pauses between, then one short transaction points each day, app and ad network it covers at it
/// (`spend_current`, one row per scope, whatever the file's size). Readers see the old rows or the new, never both; a
/// failed import is never seen, and the rows nobody points at are deleted at the same pace.
public struct SpendLedger: Sendable {
    let engine: any DatabaseEngine

    /// Rows written per statement on PostgreSQL (one array per column).
    static let chunk = 5000
    /// How staged rows are written and unused rows deleted: 2,000 a transaction, at most a third of the writer.
    public static let staging = WritePace(batch: 2_000, idleRatio: 2)
    /// How long a staging import may write nothing before it counts as crashed: it is marked failed and its rows are
    /// deleted (a staging transaction takes seconds at most).
    static let abandonedAfter: TimeInterval = 3_600

    /// Stages `rows` and makes them current in one short transaction, replacing the rows of every (day, app, ad network)
    /// they cover; then deletes the rows no longer current.
    public func importSpend(_ rows: [SpendRow], provenance: ImportProvenance, pace: WritePace = staging) async throws -> ImportSummary {
        let days = rows.map(\.day)
        let (first, last) = (days.min() ?? "", days.max() ?? "")
        let covered = Set(rows.map { SpendScope(day: $0.day, app: $0.app, adNetwork: $0.adNetwork) })
            .sorted { ($0.app, $0.adNetwork, $0.day) < ($1.app, $1.adNetwork, $1.day) }
        // Housekeeping: what it cannot delete now the next import deletes.
        try? await sweep(pace: pace)
        let id = try await engine.write { db in
            try Self.record(db, kind: "spend", state: "staging", provenance: provenance, rows: rows.count, first: first, last: last)
        }
        let replaced: Int
        do {
            for start in stride(from: 0, to: rows.count, by: pace.batch) {
                let part = Array(rows[start..<min(start + pace.batch, rows.count)])
                try await engine.pacedWrite(pace) { db in
                    // A sweep marks an import that wrote nothing for an hour failed: then it stops here, never made current.
                    guard try db.execute("UPDATE spend_imports SET progress_at = ? WHERE id = ? AND state = 'staging'", [Timestamp.format(Date()), id]) == 1 else {
                        throw Abandoned(id: id)
                    }
                    try Self.stage(part, id: id, db)
                }
            }
            let kept = SpendMeasure.allCases.filter { !$0.isCarried(by: rows) }
            replaced = try await engine.write { db in try Self.makeCurrent(id, covered: covered, keeping: kept, db) }
        } catch {
            _ = try? await engine.write { db in try db.execute("UPDATE spend_imports SET state = 'failed' WHERE id = ? AND state = 'staging'", [id]) }
            try? await sweep(pace: pace)
            throw error
        }
        try? await sweep(pace: pace)
        return ImportSummary(id: id, rows: rows.count, replaced: replaced, firstDay: first, lastDay: last)
    }

    /// An import a sweep found abandoned (it wrote nothing for ``abandonedAfter``) and marked failed.
    public struct Abandoned: Error, CustomStringConvertible {
        public let id: Int64
        public var description: String { "spend import \(id) wrote nothing for an hour and was marked failed; import the file again" }
    }

    /// The switch: points every (day, app, ad network) `covered` at import `id` in set-based statements (one row each
    /// in `spend_current`), and returns how many rows of earlier imports it replaced. The measures `kept` (those the file
    /// does not carry) are first copied from the rows in force into the import's, so a claims file never empties the
    /// cost an earlier file gave, nor a cost file the claims; it runs under the import lock, so two imports of one day
    /// never merge with a state the other replaced.
    private static func makeCurrent(_ id: Int64, covered: [SpendScope], keeping kept: [SpendMeasure], _ db: any SQLSession) throws -> Int {
        try serialise(db)
        guard try db.execute("UPDATE spend_imports SET state = 'live' WHERE id = ? AND state = 'staging'", [id]) == 1 else { throw Abandoned(id: id) }
        switch db.dialect {
        case .sqlite:
            _ = try db.execute("CREATE TEMP TABLE IF NOT EXISTS spend_swap (day TEXT NOT NULL, app INTEGER NOT NULL, ad_network_id TEXT NOT NULL)")
            _ = try db.execute("DELETE FROM spend_swap")
        case .postgres:
            _ = try db.execute("CREATE TEMP TABLE spend_swap (day text NOT NULL, app bigint NOT NULL, ad_network_id text NOT NULL) ON COMMIT DROP")
        }
        try insert(db, table: "spend_swap", columns: ["day", "app", "ad_network_id"], types: [.text, .bigint, .text],
                   values: covered.map { [$0.day.sqlValue, $0.app.sqlValue, $0.adNetwork.sqlValue] })
        let replaced = try db.value("""
            SELECT count(*) FROM spend_swap w
            JOIN spend_current c ON c.day = w.day AND c.app = w.app AND c.ad_network_id = w.ad_network_id
            JOIN spend s ON s.import_id = c.import_id AND s.day = c.day AND s.app = c.app AND s.ad_network_id = c.ad_network_id
            """, [], as: Int.self) ?? 0
        if !kept.isEmpty { try merge(id, keeping: kept.flatMap(\.columns), db) }
        _ = try db.execute("""
            INSERT INTO spend_current (day, app, ad_network_id, import_id) SELECT day, app, ad_network_id, ? FROM spend_swap WHERE true
            ON CONFLICT (day, app, ad_network_id) DO UPDATE SET import_id = excluded.import_id
            """, [id])
        _ = try db.execute("UPDATE spend_imports SET replaced = ? WHERE id = ?", [replaced, id])
        if db.dialect == .sqlite { _ = try db.execute("DELETE FROM spend_swap") }
        return replaced
    }

    /// Gives import `id`'s rows the `columns` of the rows in force for the same day, app, network, campaign and
    /// country, and adds the rows in force of the days in `spend_swap` it has no row for, with those columns only.
    private static func merge(_ id: Int64, keeping columns: [String], _ db: any SQLSession) throws {
        let inForce = "FROM spend o JOIN spend_current c ON c.day = o.day AND c.app = o.app AND c.ad_network_id = o.ad_network_id AND c.import_id = o.import_id"
        let sameKey = "o.day = spend.day AND o.app = spend.app AND o.ad_network_id = spend.ad_network_id AND o.campaign = spend.campaign AND o.country = spend.country"
        _ = try db.execute("UPDATE spend SET " + columns.map { "\($0) = (SELECT o.\($0) \(inForce) WHERE \(sameKey))" }.joined(separator: ", ")
                           + " WHERE import_id = ?", [id])
        _ = try db.execute("""
            INSERT INTO spend (day, app, ad_network_id, campaign, country, \(columns.joined(separator: ", ")), import_id)
            SELECT o.day, o.app, o.ad_network_id, o.campaign, o.country, \(columns.map { "o.\($0)" }.joined(separator: ", ")), ?
            FROM spend_swap w JOIN spend_current c ON c.day = w.day AND c.app = w.app AND c.ad_network_id = w.ad_network_id
            JOIN spend o ON o.import_id = c.import_id AND o.day = c.day AND o.app = c.app AND o.ad_network_id = c.ad_network_id
            WHERE (\(columns.map { "o.\($0) IS NOT NULL" }.joined(separator: " OR ")))
              AND NOT EXISTS (SELECT 1 FROM spend n WHERE n.import_id = ? AND n.day = o.day AND n.app = o.app AND n.ad_network_id = o.ad_network_id
                              AND n.campaign = o.campaign AND n.country = o.country)
            """, [id, id])
    }

    /// Deletes, at `pace`, the rows no reader sees: those of days a later import replaced and of failed imports. An
    /// import that wrote nothing for ``abandonedAfter`` (its process died) is marked failed first. The rows are found by
    /// a read and deleted `pace.batch` a transaction, across days.
    func sweep(pace: WritePace = staging) async throws {
        let abandoned = Timestamp.format(Date().addingTimeInterval(-Self.abandonedAfter))
        try await engine.write { db in
            _ = try db.execute("UPDATE spend_imports SET state = 'failed' WHERE kind = 'spend' AND state = 'staging' AND coalesce(progress_at, imported_at) < ?",
                               [abandoned])
        }
        let unused = try await engine.read { db in
            try db.rows("""
                SELECT DISTINCT s.import_id, s.day, s.app, s.ad_network_id FROM spend s JOIN spend_imports i ON i.id = s.import_id
                WHERE i.state <> 'staging'
                  AND NOT EXISTS (SELECT 1 FROM spend_current c WHERE c.day = s.day AND c.app = s.app AND c.ad_network_id = s.ad_network_id
                                  AND c.import_id = s.import_id)
                """, []).map { row in
                (try row.get("import_id", as: Int64.self), SpendScope(day: try row.get("day"), app: try row.get("app"), adNetwork: try row.get("ad_network_id")))
            }
        }
        var next = 0
        while next < unused.count {
            let some = Array(unused[next..<min(next + 1_000, unused.count)])
            // Each transaction deletes at most `pace.batch` rows, over as many days as they take; a day whose rows it
            // could not finish is taken again by the next.
            next += try await engine.pacedWrite(pace) { db in
                var budget = pace.batch
                var finished = 0
                for (id, scope) in some {
                    let pick = "SELECT \(db.dialect == .sqlite ? "rowid" : "ctid") FROM spend WHERE import_id = ? AND day = ? AND app = ? AND ad_network_id = ? LIMIT ?"
                    let arguments: [any SQLValueConvertible] = [id, scope.day, scope.app, scope.adNetwork, budget]
                    let deleted = try db.execute(db.dialect == .sqlite ? "DELETE FROM spend WHERE rowid IN (\(pick))" : "DELETE FROM spend WHERE ctid = ANY(ARRAY(\(pick)))", arguments)
                    guard deleted < budget else { break }
                    finished += 1
                    budget -= deleted
                }
                return finished
            }
        }
    }

    /// Writes `rows` as import `id`'s, not yet seen by readers.
    private static func stage(_ rows: [SpendRow], id: Int64, _ db: any SQLSession) throws {
        let columns = ["day", "app", "ad_network_id", "campaign", "country", "impressions", "clicks", "claimed_installs",
                       "claimed_re_engagements", "spend_micros", "currency", "import_id"]
        let values: [[SQLValue]] = rows.map { row in
            [row.day.sqlValue, row.app.sqlValue, row.adNetwork.sqlValue, row.campaign.sqlValue, row.country.sqlValue,
             row.impressions.sqlValue, row.clicks.sqlValue, row.claimedInstalls.sqlValue, row.claimedReEngagements.sqlValue,
             row.spendMicros.sqlValue, row.currency.sqlValue, id.sqlValue]
        }
        try insert(db, table: "spend", columns: columns,
                   types: [.text, .bigint, .text, .text, .text, .bigint, .bigint, .bigint, .bigint, .bigint, .text, .bigint], values: values)
    }

    /// Writes `rates` in one transaction; a rate for the same day and currencies replaces the one stored.
    public func importRates(_ rates: [ExchangeRate], provenance: ImportProvenance) async throws -> ImportSummary {
        let days = rates.map(\.day)
        let (first, last) = (days.min() ?? "", days.max() ?? "")
        return try await engine.write { db in
            try Self.serialise(db)
            let id = try Self.record(db, kind: "rates", state: "live", provenance: provenance, rows: rates.count, first: first, last: last)
            var replaced = 0
            for rate in rates {
                replaced += try db.execute("DELETE FROM exchange_rates WHERE from_currency = ? AND to_currency = ? AND day = ?", [rate.from, rate.to, rate.day])
            }
            let values: [[SQLValue]] = rates.map { rate in
                [rate.day.sqlValue, rate.from.sqlValue, rate.to.sqlValue, NSDecimalNumber(decimal: rate.rate).stringValue.sqlValue, id.sqlValue]
            }
            try Self.insert(db, table: "exchange_rates", columns: ["day", "from_currency", "to_currency", "rate", "import_id"],
                            types: [.text, .text, .text, .text, .bigint], values: values)
            try db.execute("UPDATE spend_imports SET replaced = ? WHERE id = ?", [replaced, id])
            return ImportSummary(id: id, rows: rates.count, replaced: replaced, firstDay: first, lastDay: last)
        }
    }

    /// Every import, newest first: what, who, when, which file, how many rows.
    public func imports(limit: Int) async throws -> ReportTable {
        let columns = ["id", "kind", "state", "imported_at", "imported_by", "file_name", "file_sha256", "format", "rows", "replaced", "first_day", "last_day"]
        let rows = try await engine.read { db in
            try db.rows("SELECT \(columns.joined(separator: ", ")) FROM spend_imports ORDER BY id DESC LIMIT ?", [limit]).map { $0.values.map(ReportTable.cell) }
        }
        return ReportTable(columns: columns, rows: rows)
    }

    /// Every exchange rate, by currencies and day.
    public func rates() async throws -> [ExchangeRate] {
        try await engine.read { db in
            try db.rows("SELECT day, from_currency, to_currency, rate FROM exchange_rates ORDER BY from_currency, to_currency, day", []).compactMap { row in
                guard let rate = Decimal(string: try row.get("rate", as: String.self), locale: Locale(identifier: "en_US_POSIX")) else { return nil }
                return ExchangeRate(day: try row.get("day"), from: try row.get("from_currency"), to: try row.get("to_currency"), rate: rate)
            }
        }
    }

    /// Makes imports on PostgreSQL wait for each other, first thing in their transaction, so the next statement's snapshot
    /// sees the rows an import before it committed (SQLite's one writer already serialises them).
    private static func serialise(_ db: any SQLSession) throws {
        guard db.dialect == .postgres else { return }
        _ = try db.execute("SELECT pg_advisory_xact_lock(?::bigint)", [PostgresMigrations.importLockKey])
    }

    private static func record(_ db: any SQLSession, kind: String, state: String, provenance: ImportProvenance, rows: Int, first: String, last: String) throws -> Int64 {
        try db.value("""
            INSERT INTO spend_imports (kind, state, imported_at, imported_by, file_name, file_sha256, format, rows, replaced, first_day, last_day)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) RETURNING id
            """, [kind, state, Timestamp.format(Date()), provenance.importedBy, provenance.fileName, provenance.sha256, provenance.format, rows, first, last],
            as: Int64.self) ?? 0
    }

    /// Inserts `values` (rows of `columns`): one cached statement per row on SQLite, one array per column and chunk on
    /// PostgreSQL.
    private static func insert(_ db: any SQLSession, table: String, columns: [String], types: [SQLArray.Element], values: [[SQLValue]]) throws {
        switch db.dialect {
        case .sqlite:
            let sql = "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))"
            for row in values { try db.execute(sql, row) }
        case .postgres:
            let arrays = types.map { "?::\($0.rawValue)[]" }.joined(separator: ", ")
            let sql = "INSERT INTO \(table) (\(columns.joined(separator: ", "))) SELECT * FROM unnest(\(arrays))"
            for start in stride(from: 0, to: values.count, by: chunk) {
                let part = values[start..<min(start + chunk, values.count)]
                try db.execute(sql, types.indices.map { column in SQLArray(element: types[column], values: part.map { $0[column] }) })
            }
        }
    }
}

/// What a spend file can report for a day, app and network: each replaced only by a file that carries it.
enum SpendMeasure: CaseIterable {
    case spend, claims, impressions, clicks

    /// The `spend` columns the measure is.
    var columns: [String] {
        switch self {
        case .spend: ["spend_micros", "currency"]
        case .claims: ["claimed_installs", "claimed_re_engagements"]
        case .impressions: ["impressions"]
        case .clicks: ["clicks"]
        }
    }

    /// Whether a file of `rows` reports the measure: some row gives it.
    func isCarried(by rows: [SpendRow]) -> Bool {
        switch self {
        case .spend: rows.contains { $0.spendMicros != nil }
        case .claims: rows.contains { $0.claimedInstalls != nil || $0.claimedReEngagements != nil }
        case .impressions: rows.contains { $0.impressions != nil }
        case .clicks: rows.contains { $0.clicks != nil }
        }
    }
}

/// The rows an import replaces: one day of one app's ad network.
struct SpendScope: Hashable {
    let day: String
    let app: AppID
    let adNetwork: String
}
