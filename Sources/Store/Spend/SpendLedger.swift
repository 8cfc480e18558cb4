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
/// twice changes nothing.
public struct SpendLedger: Sendable {
    let engine: any DatabaseEngine

    /// Rows written per statement on PostgreSQL (one array per column).
    static let chunk = 5000

    /// Writes `rows` in one transaction, replacing the rows of every (day, app, ad network) they cover.
    public func importSpend(_ rows: [SpendRow], provenance: ImportProvenance) async throws -> ImportSummary {
        let days = rows.map(\.day)
        let (first, last) = (days.min() ?? "", days.max() ?? "")
        let covered = Set(rows.map { SpendScope(day: $0.day, app: $0.app, adNetwork: $0.adNetwork) })
        return try await engine.write { db in
            let id = try Self.record(db, kind: "spend", provenance: provenance, rows: rows.count, first: first, last: last)
            var replaced = 0
            for scope in covered.sorted(by: { ($0.app, $0.adNetwork, $0.day) < ($1.app, $1.adNetwork, $1.day) }) {
                replaced += try db.execute("DELETE FROM spend WHERE day = ? AND app = ? AND ad_network_id = ?", [scope.day, scope.app, scope.adNetwork])
            }
            let columns = ["day", "app", "ad_network_id", "campaign", "country", "impressions", "clicks", "claimed_installs",
                           "claimed_re_engagements", "spend_micros", "currency", "import_id"]
            let values: [[SQLValue]] = rows.map { row in
                [row.day.sqlValue, row.app.sqlValue, row.adNetwork.sqlValue, row.campaign.sqlValue, row.country.sqlValue,
                 row.impressions.sqlValue, row.clicks.sqlValue, row.claimedInstalls.sqlValue, row.claimedReEngagements.sqlValue,
                 row.spendMicros.sqlValue, row.currency.sqlValue, id.sqlValue]
            }
            try Self.insert(db, table: "spend", columns: columns,
                            types: [.text, .bigint, .text, .text, .text, .bigint, .bigint, .bigint, .bigint, .bigint, .text, .bigint], values: values)
            try db.execute("UPDATE spend_imports SET replaced = ? WHERE id = ?", [replaced, id])
            return ImportSummary(id: id, rows: rows.count, replaced: replaced, firstDay: first, lastDay: last)
        }
    }

    /// Writes `rates` in one transaction; a rate for the same day and currencies replaces the one stored.
    public func importRates(_ rates: [ExchangeRate], provenance: ImportProvenance) async throws -> ImportSummary {
        let days = rates.map(\.day)
        let (first, last) = (days.min() ?? "", days.max() ?? "")
        return try await engine.write { db in
            let id = try Self.record(db, kind: "rates", provenance: provenance, rows: rates.count, first: first, last: last)
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
        let columns = ["id", "kind", "imported_at", "imported_by", "file_name", "file_sha256", "format", "rows", "replaced", "first_day", "last_day"]
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

    private static func record(_ db: any SQLSession, kind: String, provenance: ImportProvenance, rows: Int, first: String, last: String) throws -> Int64 {
        try db.value("""
            INSERT INTO spend_imports (kind, imported_at, imported_by, file_name, file_sha256, format, rows, replaced, first_day, last_day)
            VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?) RETURNING id
            """, [kind, Timestamp.format(Date()), provenance.importedBy, provenance.fileName, provenance.sha256, provenance.format, rows, first, last],
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

/// The rows an import replaces: one day of one app's ad network.
struct SpendScope: Hashable {
    let day: String
    let app: AppID
    let adNetwork: String
}
