import JWS
import Testing
@testable import Store

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
}
