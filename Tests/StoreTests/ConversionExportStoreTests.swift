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
            try await store.reports.exportConversions(query, format: .csv, page: 7) { csv += $0 }
            #expect(csv == whole.take(), "\(parameters)")
            #expect(table.rows.count > 7, "more than one page: \(parameters)")
            var ndjson = ""
            try await store.reports.exportConversions(query, format: .ndjson, page: 7) { ndjson += String(decoding: $0, as: UTF8.self) }
            let lines = try ndjson.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
            #expect(lines == table.rows.map { row in .object(JSONObject(zip(table.columns, row).map { JSONMember(key: $0.0, value: $0.1) })) }, "\(parameters)")
        }
        // A client that goes away: the write fails, the export ends there and reads no further page.
        var pages = 0
        await #expect(throws: Gone.self) {
            try await store.reports.exportConversions(try ReportQuery.parse([("include_uncounted", "true")]), format: .csv, page: 7) { _ in
                pages += 1
                if pages == 2 { throw Gone() }
            }
        }
        #expect(pages == 2)
    }
}
