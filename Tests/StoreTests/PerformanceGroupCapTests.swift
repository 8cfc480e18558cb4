import Foundation
import JWS
import Spend
@testable import Store
import Testing
import TestSupport

/// Security review, finding 5: the performance report is added up as its reads stream, stops at its group cap, and
/// comes a page at a time in the same order as the whole report.
@Suite struct PerformanceGroupCapTests {
    /// Three days of two campaigns in two countries: 12 groups by day, campaign and country, 4 by campaign and country.
    static func fixture(_ engine: TestEngine) async throws -> StoreDatabase {
        let store = try engine.freshStore()
        var lines = ["date,app,ad_network,campaign,country,impressions,clicks,installs,re_engagements,spend,currency"]
        for day in ["2026-11-20", "2026-11-21", "2026-11-22"] {
            for campaign in ["10", "9"] {
                for country in ["US", "DE"] {
                    lines.append("\(day),1108187390,example123.skadnetwork,\(campaign),\(country),1000,50,20,1,12.50,USD")
                }
            }
        }
        let file = Array((lines.joined(separator: "\n") + "\n").utf8)
        guard case .success(let rows) = SpendFile.read(file, format: .generic) else {
            store.close()
            Issue.record("the file was refused")
            throw CancellationError()
        }
        _ = try await store.spend.importSpend(rows, provenance: ImportProvenance(importedBy: "test", fileName: nil, format: "generic", bytes: file))
        return store
    }

    static func query(_ dimensions: [PerformanceQuery.Dimension]) -> PerformanceQuery {
        var query = PerformanceQuery()
        query.groupBy = dimensions
        return query
    }

    @Test(arguments: TestEngine.allCases) func theCapStopsAReportOfMoreGroups(engine: TestEngine) async throws {
        let store = try await Self.fixture(engine)
        defer { store.close() }
        let query = Self.query([.day, .campaign, .country])
        let uncapped = try await store.performance.report(query, maximumGroups: nil)
        #expect(uncapped.rows.count == 12)
        let atTheCap = try await store.performance.report(query, maximumGroups: 12)
        #expect(atTheCap.rows == uncapped.rows, "a report of exactly the cap is whole")
        await #expect(throws: PerformanceReader.TooManyGroups(maximum: 11)) {
            _ = try await store.performance.report(query, maximumGroups: 11)
        }
        // The cap counts the report's groups, not a page's rows.
        await #expect(throws: PerformanceReader.TooManyGroups(maximum: 11)) {
            _ = try await store.performance.page(query, maximumGroups: 11, after: nil, limit: 1)
        }
        // Fewer dimensions, or fewer days, fit under the same cap.
        #expect(try await store.performance.report(Self.query([.campaign, .country]), maximumGroups: 4).rows.count == 4)
        var oneDay = query
        oneDay.from = Date(timeIntervalSince1970: 1_795_132_800) // 2026-11-20
        oneDay.to = oneDay.from?.addingTimeInterval(86_400)
        #expect(try await store.performance.report(oneDay, maximumGroups: 4).rows.count == 4)
    }

    @Test(arguments: TestEngine.allCases) func pagesFollowTheReportsOrder(engine: TestEngine) async throws {
        let store = try await Self.fixture(engine)
        defer { store.close() }
        let query = Self.query([.day, .campaign, .country])
        let whole = try await store.performance.report(query, maximumGroups: nil)
        // In the order of the dimensions, the first first; campaigns are text, so "10" comes before "9".
        let names: [[String]] = [["2026-11-20", "10", "DE"], ["2026-11-20", "10", "US"], ["2026-11-20", "9", "DE"], ["2026-11-20", "9", "US"]]
        let first = names.map { $0.map(JSONValue.string) }
        #expect(whole.rows.prefix(4).map { Array($0.prefix(3)) } == first)
        var joined: [[JSONValue]] = []
        var after: [JSONValue]?
        var pages = 0
        repeat {
            let page = try await store.performance.page(query, maximumGroups: 12, after: after, limit: 5)
            #expect(page.table.columns == whole.columns)
            joined += page.table.rows
            after = page.next
            pages += 1
            if let after { #expect(Array(page.table.rows.last?.prefix(3) ?? []) == after, "the cursor is the last row's dimensions") }
        } while after != nil && pages < 10
        #expect(pages == 3)
        #expect(joined == whole.rows)
        // A page that ends the report exactly has no next page.
        let last = try await store.performance.page(query, maximumGroups: nil, after: Array(whole.rows[6].prefix(3)), limit: 5)
        #expect(last.table.rows == Array(whole.rows[7...]))
        #expect(last.next == nil)
    }
}
