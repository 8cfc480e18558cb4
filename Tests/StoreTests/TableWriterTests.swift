import CountersignServer
import JWS
import Testing
@testable import Store
import TestSupport

/// The one table writer (issue 29, item 3): JSON is exactly the JSON document of the rows, NDJSON one such object a
/// line, CSV the same from JSON cells and from database values, with text that would run as a formula neutralised.
@Suite struct TableWriterTests {
    static let columns = ["id", "name", "value", "list", "ratio", "when"]
    static let values: [[SQLValue]] = [
        [.integer(1), .text("plain"), .real(2.5), .text("a,b"), .real(3), .null],
        [.integer(-42), .text("=HYPERLINK(\"http://x\")"), .integer(Int64.min), .text("line\nbreak\r\t\u{1}"), .blob([0, 1, 2]), .text("é ✓")],
        [.integer(Int64.max), .text("@cmd"), .null, .text("\"quoted\""), .real(-0.5), .text("+1")],
    ]

    static func bytes(_ format: TableWriter.Format, cells: Bool) -> String {
        var writer = TableWriter(format: format, columns: columns)
        for row in values {
            if cells { writer.append(row.map(ReportTable.cell)) } else { writer.append(values: row) }
        }
        writer.finish(extra: [JSONMember(key: "next_after", value: .number("3"))])
        return String(decoding: writer.take(), as: UTF8.self)
    }

    @Test func jsonIsTheDocumentOfTheRows() {
        let rows = Self.values.map { row in
            JSONValue.object(JSONObject(zip(Self.columns, row).map { JSONMember(key: $0.0, value: ReportTable.cell($0.1)) }))
        }
        let document = JSONValue.object(JSONObject([JSONMember(key: "rows", value: .array(rows)), JSONMember(key: "next_after", value: .number("3"))]))
        #expect(Self.bytes(.json, cells: true) == document.serialized + "\n")
        #expect(Self.bytes(.json, cells: false) == document.serialized + "\n")
        #expect(Self.bytes(.ndjson, cells: false) == rows.map { $0.serialized + "\n" }.joined())
        #expect(Self.bytes(.ndjson, cells: true) == Self.bytes(.ndjson, cells: false))
    }

    @Test func csvIsTheSameFromCellsAndValuesAndNeutralisesFormulas() {
        let csv = Self.bytes(.csv, cells: false)
        #expect(csv == Self.bytes(.csv, cells: true))
        let lines = csv.components(separatedBy: "\r\n")
        #expect(lines[0] == "id,name,value,list,ratio,when")
        #expect(lines[1] == "1,plain,2.5,\"a,b\",3,")
        #expect(lines[2].hasPrefix("-42,\"'=HYPERLINK(\"\"http://x\"\")\",-9223372036854775808,\"line\nbreak"))
        #expect(csv.contains(",AAEC,\"é ✓\"") == false && csv.contains(",AAEC,é ✓"))
        #expect(csv.contains("9223372036854775807,\"'@cmd\",,\"\"\"quoted\"\"\",-0.5,\"'+1\""))
    }

    /// A row written as it is read (``DatabaseEngine/readRows(_:_:reuse:into:_:)``: SQLite's text copied from its buffer,
    /// PostgreSQL's from the row sequence's) is the row written from its values, in every format and on both engines:
    /// formulas, quotes, line breaks, non-ASCII text, bytes, extreme numbers and NULL; on SQLite also text that is not
    /// valid UTF-8, repaired as `String` repairs it; on PostgreSQL sums (`numeric`, whole and not), booleans and small
    /// integers.
    @Test(arguments: TestEngine.allCases) func rowsWrittenAsTheyAreReadAreTheRowsWrittenFromValues(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        let cast = engine == .sqlite ? "" : "::text"
        // A statement a row (PostgreSQL would not unite bytes and numbers in one column).
        var queries: [(String, [SQLValue])] = Self.values.map { row in
            ("SELECT " + row.indices.map { "?\(row[$0] == .null ? cast : "") AS c\($0)" }.joined(separator: ", "), row)
        }
        if engine == .sqlite {
            // Bytes SQLite holds as text although they are not UTF-8.
            queries.append(("SELECT 7, CAST(x'66ff' AS TEXT), CAST(x'3dc3' AS TEXT), 'x', 0.25, NULL", []))
        } else {
            queries.append(("SELECT 7::smallint, 'x'::varchar, sum(v), true, 2.5::numeric, NULL::bigint FROM (VALUES (9223372036854775807::numeric), (1)) t(v)", []))
            queries.append(("SELECT 8, 'y'::name, -12345678901.000::numeric, false, 0.1::float4, NULL::numeric", []))
        }
        for format in [TableWriter.Format.csv, .ndjson, .json] {
            var asRead = TableWriter(format: format, columns: Self.columns)
            var fromValues = TableWriter(format: format, columns: Self.columns)
            for (sql, arguments) in queries {
                asRead = try await store.engine.readRows(sql, arguments, reuse: .once, into: asRead) { writer, row in writer.append(cells: row) }
                for row in try await store.engine.read({ db in try db.rows(sql, arguments, reuse: .once) }) { fromValues.append(values: row.values) }
            }
            asRead.finish()
            fromValues.finish()
            let written = (asRead.take(), fromValues.take())
            #expect(written.0 == written.1, "\(format): \(String(decoding: written.0, as: UTF8.self))")
            #expect(String(validating: written.0, as: UTF8.self) != nil, "\(format) is UTF-8")
            if format == .csv { #expect(String(decoding: written.0, as: UTF8.self).contains("\"'=HYPERLINK(")) }
        }
    }

    /// A column of a type the store does not read is an error on PostgreSQL's row sequence too, never a guess.
    @Test func aColumnOfAnUnreadTypeIsAnError() async throws {
        let store = try TestEngine.postgres.freshStore()
        defer { store.close() }
        await #expect(throws: PostgresEngineError.self) {
            _ = try await store.engine.readRows("SELECT 1, now()", [], reuse: .once, into: 0) { count, _ in count += 1 }
        }
        // The connection is still good for the next query.
        #expect(try await store.engine.readRows("SELECT 1 UNION ALL SELECT 2", [], reuse: .once, into: 0) { count, _ in count += 1 } == 2)
    }
}
