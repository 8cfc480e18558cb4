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

    /// A row written as it is read (``SQLSession/forEachRow(_:_:_:)``, SQLite's text copied from its buffer) is the row
    /// written from its values, in every format and on both engines: formulas, quotes, line breaks, non-ASCII text,
    /// bytes, extreme numbers and NULL; on SQLite also text that is not valid UTF-8, repaired as `String` repairs it.
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
        }
        for format in [TableWriter.Format.csv, .ndjson, .json] {
            let written = try await store.engine.read { [queries] db -> ([UInt8], [UInt8]) in
                var asRead = TableWriter(format: format, columns: Self.columns)
                var fromValues = TableWriter(format: format, columns: Self.columns)
                for (sql, arguments) in queries {
                    try db.forEachRow(sql, arguments) { asRead.append(cells: $0) }
                    for row in try db.rows(sql, arguments, reuse: .once) { fromValues.append(values: row.values) }
                }
                asRead.finish()
                fromValues.finish()
                return (asRead.take(), fromValues.take())
            }
            #expect(written.0 == written.1, "\(format): \(String(decoding: written.0, as: UTF8.self))")
            #expect(String(validating: written.0, as: UTF8.self) != nil, "\(format) is UTF-8")
            if format == .csv { #expect(String(decoding: written.0, as: UTF8.self).contains("\"'=HYPERLINK(")) }
        }
    }
}
