import JWS
import Store

extension QueryProblem {
    /// The problem as the CLI names it: the parameter as its option (`--include-uncounted`), the message as it is, so
    /// the values it suggests (`ad_group`) are the ones `--by` takes.
    package var commandLineDescription: String {
        "--\(parameter.replacingOccurrences(of: "_", with: "-")): \(message)"
    }
}

extension ReportTable {
    /// A table of `objects`, one row each: the columns are every member name in the order first seen, a member an
    /// object lacks is null.
    package init(objects: [JSONObject]) {
        var columns: [String] = []
        for object in objects { for member in object.members where !columns.contains(member.key) { columns.append(member.key) } }
        self.init(columns: columns, rows: objects.map { object in columns.map { object[$0] ?? .null } })
    }
}

/// Output formats for reports and conversion exports, shared by the CLI and the HTTP API.
package enum ReportFormat: String, CaseIterable {
    case json, csv, ndjson, table

    var contentType: String {
        switch self {
        case .json: "application/json"
        case .csv: "text/csv; charset=utf-8"
        case .ndjson: "application/x-ndjson"
        case .table: "text/plain; charset=utf-8"
        }
    }

    /// The format an HTTP request asks for: `format=` wins, then the Accept header, then JSON.
    static func negotiate(parameter: String?, accept: String?) -> ReportFormat? {
        if let parameter { return parameter == "table" ? nil : ReportFormat(rawValue: parameter) }
        guard let accept else { return .json }
        if accept.contains("text/csv") { return .csv }
        if accept.contains("ndjson") { return .ndjson }
        return .json
    }

    /// Renders `table`; JSON wraps the rows in `{"rows": [...]}` plus `extra` members. A table with a time zone states
    /// it: JSON as `time_zone`, the terminal table on its last line (CSV and NDJSON rows have no place for it; the HTTP
    /// API sends it as a header). CSV, NDJSON and JSON are written by ``TableWriter``, as every export is.
    package func render(_ table: ReportTable, extra: [JSONMember] = []) -> String {
        guard self == .table else { return String(decoding: bytes(table, extra: extra), as: UTF8.self) }
        let cells = [table.columns] + table.rows.map { $0.map { ControlCharacters.escaped(TableWriter.plain($0)) } }
        let widths = table.columns.indices.map { column in cells.map { $0[column].count }.max() ?? 0 }
        return cells.map { row in
            let line = row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }.joined(separator: "  ")
            return String(line.reversed().drop { $0 == " " }.reversed())
        }.joined(separator: "\n") + "\n" + (table.timeZone.map { zone in "(days and weeks \(table.dayBasis.map { $0.phrase + ", " } ?? "")in \(zone))\n" } ?? "")
    }

    /// ``render(_:extra:)`` as UTF-8 bytes: the writer's bytes as they are, with no `String` made of them on the way.
    package func bytes(_ table: ReportTable, extra: [JSONMember] = []) -> [UInt8] {
        guard let format = writerFormat else { return Array(render(table, extra: extra).utf8) }
        var writer = TableWriter(format: format, columns: table.columns)
        for row in table.rows { writer.append(row) }
        writer.finish(extra: Self.members(table, extra))
        return writer.bytes
    }

    /// ``bytes(_:extra:)`` handed to `emit` in pieces of about `piece` bytes as the rows are written, so an HTTP answer
    /// never holds its whole text at once.
    package func write(_ table: ReportTable, extra: [JSONMember] = [], piece: Int = 64 * 1024,
                       to emit: ([UInt8]) async throws -> Void) async throws {
        guard let format = writerFormat else { return try await emit(bytes(table, extra: extra)) }
        var writer = TableWriter(format: format, columns: table.columns)
        for row in table.rows {
            writer.append(row)
            if writer.bytes.count >= piece { try await emit(writer.take()) }
        }
        writer.finish(extra: Self.members(table, extra))
        try await emit(writer.take())
    }

    /// How ``TableWriter`` writes the format; nil for the terminal's table, which ``render(_:extra:)`` lays out.
    private var writerFormat: TableWriter.Format? {
        switch self {
        case .json: .json
        case .ndjson: .ndjson
        case .csv: .csv
        case .table: nil
        }
    }

    /// The members JSON adds after the rows: the table's `time_zone` and `day_basis`, then `extra`.
    private static func members(_ table: ReportTable, _ extra: [JSONMember]) -> [JSONMember] {
        (table.timeZone.map { [JSONMember(key: "time_zone", value: .string($0))] } ?? [])
            + (table.dayBasis.map { [JSONMember(key: "day_basis", value: .string($0.rawValue))] } ?? []) + extra
    }
}
