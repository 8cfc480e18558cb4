import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWS
import NIOCore
import Store
import Testing
import TestSupport
@testable import CountersignServer

/// Security review, finding 5: `GET /v1/performance` had no row limit and built its whole answer in memory. It now
/// pages as `/v1/conversions` does (`limit`, `after`, `Next-After`, `next_after`) and refuses a report of more groups
/// than `--performance-max-groups`, 400 `too_many_groups`, saying what to narrow.
@Suite struct PerformancePagingTests {
    /// Three days of two campaigns in two countries: 12 groups by day, campaign and country, 4 by campaign and country.
    static let file: String = {
        var lines = ["date,app,ad_network,campaign,country,impressions,clicks,installs,re_engagements,spend,currency"]
        for day in ["2026-11-20", "2026-11-21", "2026-11-22"] {
            for campaign in ["10", "11"] {
                for country in ["DE", "US"] {
                    lines.append("\(day),1108187390,example123.skadnetwork,\(campaign),\(country),1000,50,20,1,12.50,USD")
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }()

    static let report = "/v1/performance?by=day,campaign,country&from=2026-11-01&to=2026-12-01"

    /// A server on `engine` whose reports add up at most `maximumGroups` groups, and a key that imports and reads.
    static func server(_ engine: TestEngine, maximumGroups: Int = ServerSettings().performanceMaxGroups) async throws -> (LiveServer, String) {
        var server = LiveServer(engine: engine)
        server.settings.performanceMaxGroups = maximumGroups
        let store = try server.store()
        defer { store.close() }
        return (server, try await store.apiKeys.create(name: "analyst", scopes: [.schemas, .read]).key)
    }

    static func importFile(_ client: any TestClientProtocol, _ bearer: HTTPFields) async throws {
        let imported = try await client.execute(uri: "/v1/spend", method: .post, headers: bearer, body: ByteBuffer(string: file))
        #expect(imported.status == .ok)
        #expect(imported.json?["rows"]?.wholeNumber == 12)
    }

    @Test(arguments: TestEngine.allCases) func pagesJoinToTheWholeReport(engine: TestEngine) async throws {
        let (server, key) = try await Self.server(engine)
        #expect(server.settings.performanceMaxGroups == 50_000)
        try await server.run { client in
            let bearer: HTTPFields = [.authorization: "Bearer \(key)"]
            try await Self.importFile(client, bearer)
            let whole = try await client.execute(uri: Self.report, method: .get, headers: bearer)
            #expect(whole.status == .ok)
            guard case .array(let expected)? = whole.json?["rows"] else { Issue.record("no rows"); return }
            #expect(expected.count == 12)
            #expect(whole.json?["next_after"] == .null, "one page holds the whole report")
            #expect(whole.headers[.init("Next-After")!] == nil)
            // Two rows a page: Next-After (and next_after) on every page but the last, and the pages join to the whole.
            var joined: [JSONValue] = []
            var after: String?
            var pages = 0
            repeat {
                let page = try await client.execute(uri: Self.report + "&limit=2" + (after.map { "&after=\($0)" } ?? ""), method: .get, headers: bearer)
                #expect(page.status == .ok)
                guard case .array(let rows)? = page.json?["rows"] else { Issue.record("no rows on page \(pages + 1)"); return }
                joined += rows
                pages += 1
                after = page.headers[.init("Next-After")!]
                #expect(page.json?["next_after"] == after.map(JSONValue.string) ?? .null, "next_after is the Next-After header")
                #expect((after == nil) == (joined.count == expected.count), "Next-After until the last page, page \(pages)")
            } while after != nil && pages < 10
            #expect(pages == 6)
            #expect(joined == expected)
            // CSV pages the same way, each with the header line, the cursor in the header alone.
            let csv = String(buffer: try await client.execute(uri: Self.report + "&format=csv", method: .get, headers: bearer).body)
            let first = try await client.execute(uri: Self.report + "&format=csv&limit=5", method: .get, headers: bearer)
            let cursor = try #require(first.headers[.init("Next-After")!])
            let rest = try await client.execute(uri: Self.report + "&format=csv&limit=100&after=\(cursor)", method: .get, headers: bearer)
            #expect(rest.headers[.init("Next-After")!] == nil)
            func lines(_ text: String) -> [String] { text.split(separator: "\r\n").map(String.init) }
            let firstLines = lines(String(buffer: first.body)), restLines = lines(String(buffer: rest.body))
            #expect(firstLines.count == 6 && restLines.count == 8)
            #expect(firstLines.first == restLines.first, "each page has the header line")
            #expect(firstLines + restLines.dropFirst() == lines(csv))
        }
    }

    @Test(arguments: TestEngine.allCases) func aBadCursorOrLimitIsABadParameter(engine: TestEngine) async throws {
        let (server, key) = try await Self.server(engine)
        try await server.run { client in
            let bearer: HTTPFields = [.authorization: "Bearer \(key)"]
            try await Self.importFile(client, bearer)
            let cursors = [
                "not!a-cursor",
                Base64.encode(Array("not json".utf8), alphabet: .url),
                Base64.encode(Array(#"{"day":"2026-11-20"}"#.utf8), alphabet: .url),
                // A cursor of another report (by=day), and one whose cells are not cells.
                PerformanceCursor.encode([.string("2026-11-20")]),
                PerformanceCursor.encode([.string("2026-11-20"), .array([]), .null]),
                String(repeating: "A", count: PerformanceCursor.maximumLength + 4),
            ]
            for cursor in cursors {
                let answer = try await client.execute(uri: Self.report + "&after=\(cursor)", method: .get, headers: bearer)
                #expect(answer.status == .badRequest, "\(cursor.prefix(40))")
                #expect(answer.json?["error"]?.string == "bad_parameter", "\(cursor.prefix(40))")
                #expect(answer.json?["message"]?.string?.hasPrefix("after:") == true, "\(cursor.prefix(40))")
            }
            for limit in ["0", "10001", "ten"] {
                let answer = try await client.execute(uri: Self.report + "&limit=\(limit)", method: .get, headers: bearer)
                #expect(answer.status == .badRequest, "limit=\(limit)")
                #expect(answer.json?["error"]?.string == "bad_parameter", "limit=\(limit)")
            }
            // A cursor of the same report past its last row is an empty last page.
            let past = PerformanceCursor.encode([.string("2026-11-23"), .string(""), .string("")])
            let empty = try await client.execute(uri: Self.report + "&after=\(past)", method: .get, headers: bearer)
            #expect(empty.status == .ok)
            #expect(empty.json?["rows"] == .array([]))
            #expect(empty.json?["next_after"] == .null)
        }
    }

    @Test(arguments: TestEngine.allCases) func aReportOfMoreGroupsThanTheCapIsRefused(engine: TestEngine) async throws {
        let (server, key) = try await Self.server(engine, maximumGroups: 5)
        try await server.run { client in
            let bearer: HTTPFields = [.authorization: "Bearer \(key)"]
            try await Self.importFile(client, bearer)
            let fewer = try await client.execute(uri: "/v1/performance?by=campaign,country", method: .get, headers: bearer)
            #expect(fewer.status == .ok)
            if case .array(let rows)? = fewer.json?["rows"] { #expect(rows.count == 4) } else { Issue.record("no rows") }
            // Refused whichever page or format is asked: the cap counts the report's groups.
            for extra in ["", "&limit=1", "&format=csv"] {
                let refused = try await client.execute(uri: Self.report + extra, method: .get, headers: bearer)
                #expect(refused.status == .badRequest, "\(extra)")
                #expect(refused.json?["error"]?.string == "too_many_groups", "\(extra)")
                #expect(refused.json?["message"]?.string == "by=day,campaign,country selects more than 5 groups; narrow from/to, filter by app, "
                        + "ad_network, campaign or country, or group by fewer dimensions", "\(extra)")
            }
            // The same grouping over one day fits.
            let oneDay = try await client.execute(uri: "/v1/performance?by=day,campaign,country&from=2026-11-20&to=2026-11-21", method: .get, headers: bearer)
            #expect(oneDay.status == .ok)
            if case .array(let rows)? = oneDay.json?["rows"] { #expect(rows.count == 4) } else { Issue.record("no rows") }
        }
    }
}
