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
        _ = try await store.schemas.put(app: "10738027756", document: try ExampleSchema.document("shop"))
        _ = try store.ledger.persist(try EngineEqualityTests.traffic(count: 150))
        for parameters in [[("include_uncounted", "true")], [("protocol", "aak")], [("app", "10738027756"), ("window", "0")]] {
            let query = try ReportQuery.parse(parameters)
            let whole = try await store.reports.conversionsCSV(query, after: 0, limit: 10_000)
            var csv = ""
            try await store.reports.exportConversions(query, csv: true, page: 7) { csv += $0 }
            #expect(csv == whole.csv, "\(parameters)")
            #expect(whole.rows > 7, "more than one page: \(parameters)")
            let table = try await store.reports.conversions(query, after: 0, limit: 10_000)
            var ndjson = ""
            try await store.reports.exportConversions(query, csv: false, page: 7) { ndjson += $0 }
            let lines = try ndjson.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
            #expect(lines == table.rows.map { row in .object(JSONObject(zip(table.columns, row).map { JSONMember(key: $0.0, value: $0.1) })) }, "\(parameters)")
        }
        // A client that goes away: the write fails, the export ends there and reads no further page.
        var pages = 0
        await #expect(throws: Gone.self) {
            try await store.reports.exportConversions(try ReportQuery.parse([("include_uncounted", "true")]), csv: true, page: 7) { _ in
                pages += 1
                if pages == 2 { throw Gone() }
            }
        }
        #expect(pages == 2)
    }
}
