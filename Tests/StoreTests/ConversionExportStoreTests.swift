import CountersignServer
import Foundation
import JWS
import Testing
@testable import Store
import TestSupport

/// The streamed export (issue 28, item 5): a page at a time, exactly the rows of the paged reads, on both engines;
/// a writer that fails (a client gone) stops the reading.
@Suite struct ConversionExportStoreTests {
    struct Gone: Error {}

    /// The export writes the `conversions` view's columns, as docs/cli.md says (issue 49, finding 6: it wrote 32 of 56,
    /// without the estimated install, the local day, the middle revenue, whole millionths or the dedup key), and each
    /// value is the view's; only `source_levels` (the schema's names as JSON) is left out. On both engines.
    @Test(arguments: TestEngine.allCases) func theExportHasTheViewsColumns(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        _ = try await store.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop"))
        _ = try store.ledger.persist(try EngineEqualityTests.traffic(count: 40))
        let viewColumns: [String] = switch engine {
        case .sqlite: try await store.column("SELECT name FROM pragma_table_info('conversions') ORDER BY cid", as: String.self)
        case .postgres: try await store.column("SELECT column_name::text FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'conversions' ORDER BY ordinal_position", as: String.self)
        }
        var ndjson = ""
        try await store.reports.exportConversions(try ReportQuery.parse([("include_uncounted", "true")]), into: TableWriter(format: .ndjson, columns: ReportReader.conversionColumns)) { ndjson += String(decoding: $0, as: UTF8.self) }
        let rows = try ndjson.split(separator: "\n").map { try #require(try JSONParser.parse(Array($0.utf8)).object) }
        #expect(rows.count == (try await store.scalar("SELECT count(*) FROM conversions", as: Int.self)) && rows.count > 30)
        #expect(rows.first?.members.map(\.key) == viewColumns.filter { $0 != "source_levels" })
        for column in ["estimated_install_at", "local_day", "revenue_mid", "revenue_min_micros", "dedup_key"] {
            let values = try await store.rows("SELECT id, \(column) FROM conversions ORDER BY id")
            for (row, value) in zip(rows, values) {
                #expect(row["id"] == .number(String(try value.get(at: 0, as: Int64.self))))
                #expect(row[column] == ReportTable.cell(value.values[1]), "\(column)")
            }
        }
    }

    @Test(arguments: TestEngine.allCases) func theExportIsEveryPageOnce(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        _ = try await store.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop"))
        _ = try store.ledger.persist(try EngineEqualityTests.traffic(count: 150))
        for parameters in [[("include_uncounted", "true")], [("protocol", "aak")], [("app", "10738027756"), ("window", "0")]] {
            let query = try ReportQuery.parse(parameters)
            // The whole page read as JSON cells and written as CSV: the export, written from database values a page of
            // 7 at a time, must be the same bytes.
            let table = try await store.reports.conversions(query, after: 0, limit: 10_000)
            var whole = TableWriter(format: .csv, columns: table.columns)
            for row in table.rows { whole.append(row) }
            var csv: [UInt8] = []
            try await store.reports.exportConversions(query, into: TableWriter(format: .csv, columns: ReportReader.conversionColumns), page: 7) { csv += $0 }
            #expect(csv == whole.take(), "\(parameters)")
            #expect(table.rows.count > 7, "more than one page: \(parameters)")
            var ndjson = ""
            try await store.reports.exportConversions(query, into: TableWriter(format: .ndjson, columns: ReportReader.conversionColumns), page: 7) { ndjson += String(decoding: $0, as: UTF8.self) }
            let lines = try ndjson.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
            #expect(lines == table.rows.map { row in .object(JSONObject(zip(table.columns, row).map { JSONMember(key: $0.0, value: $0.1) })) }, "\(parameters)")
        }
        // A client that goes away: the write fails, the export ends there and reads no further page.
        var pages = 0
        await #expect(throws: Gone.self) {
            try await store.reports.exportConversions(try ReportQuery.parse([("include_uncounted", "true")]), into: TableWriter(format: .csv, columns: ReportReader.conversionColumns), page: 7) { _ in
                pages += 1
                if pages == 2 { throw Gone() }
            }
        }
        #expect(pages == 2)
    }
}
