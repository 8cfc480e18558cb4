import Foundation
import JWS
import Postback

/// Reports and conversion pages over counted postbacks.
public struct ReportReader: Sendable {
    let engine: any DatabaseEngine

    /// Runs a report (from the rollup when it can answer; `forceRows` scans the rows, for checking the two agree).
    public func report(_ query: ReportQuery, forceRows: Bool = false) async throws -> ReportTable {
        let (sql, arguments) = query.sql(forceRows: forceRows, dialect: engine.dialect)
        let columns = query.grouping.map(\.rawValue) + ReportQuery.metrics
        let minimum = columns.firstIndex(of: "revenue_min")!, maximum = columns.firstIndex(of: "revenue_max")!
        let middle = columns.firstIndex(of: "revenue_mid")!
        let rows = try await engine.read { db in
            try db.rows(sql, arguments, reuse: .once).map { row in
                var cells = row.values.map(ReportTable.cell)
                cells[minimum] = .number(Money.decimal(micros: try row.get(at: minimum, as: Int64.self)))
                cells[maximum] = .number(Money.decimal(micros: try row.get(at: maximum, as: Int64.self)))
                cells[middle] = .number(Money.decimal(halfOfMicros: try row.get(at: middle, as: Int64.self)))
                return cells
            }
        }
        return ReportTable(columns: columns, rows: rows, timeZone: query.timeZone.identifier, dayBasis: query.basis)
    }

    /// Stored conversions, oldest first, after the `after` id cursor; at most `limit`.
    public func conversions(_ query: ReportQuery, after: Int64, limit: Int) async throws -> ReportTable {
        let (sql, arguments) = Self.conversionsPageSQL(query, after: after, limit: limit)
        let rows = try await engine.read { db in try db.rows(sql, arguments, reuse: .once).map { $0.values.map(ReportTable.cell) } }
        return ReportTable(columns: Self.conversionColumns, rows: rows)
    }

    /// Every conversion `query` selects, oldest first, written into `sink` (made with ``conversionColumns``) and handed
    /// to `write` a page of `page` rows at a time (by id cursor, so memory stays flat whatever the size; whatever the sink
    /// wrote before the first row, such as CSV's header, comes first). Ends when the rows end or `write` throws (the
    /// client went away: no further page is read).
    public func exportConversions<Sink: TableSink>(_ query: ReportQuery, into sink: Sink, page: Int = 10_000,
                                                   write: ([UInt8]) async throws -> Void) async throws {
        var sink = sink
        var after: Int64 = 0
        while true {
            let (sql, arguments) = Self.conversionsPageSQL(query, after: after, limit: page)
            // Each row is written as it is read; the id of the page's last row is the next page's cursor.
            let read = try await engine.readRows(sql, arguments, reuse: .once, into: ExportPage(sink: sink)) { page, row in
                page.sink.append(cells: row)
                page.count += 1
                page.lastID = row.withCell(at: 0) { if case .integer(let id) = $0 { id } else { nil } }
            }
            sink = read.sink
            let last = read.count == page ? read.lastID : nil
            if last == nil { sink.finish(extra: []) }
            let text = sink.take()
            if !text.isEmpty { try await write(text) }
            guard let last else { return }
            after = last
        }
    }

    /// What reading a page of an export gives: its rows written, how many, and the last one's id.
    private struct ExportPage<Sink: TableSink>: Sendable {
        var sink: Sink
        var count = 0
        var lastID: Int64?
    }

    /// One page of the `conversions` view after the `after` id cursor, with the query's filters.
    static func conversionsPageSQL(_ query: ReportQuery, after: Int64, limit: Int) -> (sql: String, arguments: [any SQLValueConvertible]) {
        var (whereSQL, arguments) = query.whereClause()
        whereSQL += (whereSQL.isEmpty ? "WHERE " : " AND ") + "c.id > ?"
        arguments += [after, limit]
        let sql = "SELECT \(conversionColumns.map { "c.\($0)" }.joined(separator: ", ")) FROM conversions c \(whereSQL) ORDER BY c.id LIMIT ?"
        return (sql, arguments)
    }

    /// The columns `/v1/conversions` and the export return: the `conversions` view's, in its order (docs/sql.md), all
    /// but `source_levels` (the schema's names as JSON; reports give them as campaign_name and the like).
    public static let conversionColumns = [
        "id", "received_at", "day", "time_zone", "local_day", "estimated_install_at", "protocol", "version", "outcome", "environment",
        "key_id", "countable", "reason", "ad_network_id", "app", "app_name", "dedup_key", "postback_identifier", "source_identifier",
        "digit_count", "campaign", "ad_group", "creative", "conversion_type", "conversion_class", "conversion_window", "did_win",
        "redownload", "interaction", "fidelity_type", "publisher_item_id", "source_domain", "marketplace_id", "tier_min", "tier_max",
        "conversion_value_unsigned", "coarse_value_unsigned", "ad_interaction_type_unsigned", "country_code_unsigned", "country_known",
        "decode_status", "schema_revision", "schema_version", "revenue_min", "revenue_max", "revenue_mid", "currency",
        "revenue_min_micros", "revenue_max_micros", "event_count", "duplicates", "replays", "unverified_copies",
    ]
}

/// A report's result: column names and rows of JSON values.
public struct ReportTable: Sendable {
    public let columns: [String]
    public let rows: [[JSONValue]]
    /// The IANA zone of the table's `day` and `week` values, for tables that have them.
    public let timeZone: String?
    /// Which day the table's days and period are of, for tables that count postbacks by day.
    public let dayBasis: DayBasis?

    /// Creates a table.
    public init(columns: [String], rows: [[JSONValue]], timeZone: String? = nil, dayBasis: DayBasis? = nil) {
        self.columns = columns
        self.rows = rows
        self.timeZone = timeZone
        self.dayBasis = dayBasis
    }

    /// A database value as a JSON cell: integers and whole doubles as integers, blobs as base64.
    static func cell(_ value: SQLValue) -> JSONValue {
        switch value {
        case .null: .null
        case .integer(let integer): .number(String(integer))
        case .real(let double): .number(number(double))
        case .text(let text): .string(text)
        case .blob(let bytes): .string(Base64.encode(bytes, alphabet: .standard))
        }
    }

    /// A double as report text: whole values without a fraction.
    public static func number(_ double: Double) -> String {
        double == double.rounded() && abs(double) < 1e15 ? String(Int64(double)) : String(double)
    }
}
