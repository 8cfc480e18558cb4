import Foundation
import Synchronization
import GRDB
import Hummingbird
import HummingbirdTesting
import Testing
import JWS
import Postback
import PostbackMint
import Store
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// `/v1/reports` and `/v1/conversions` over a live server, and `countersign report` on the same file.
@Suite struct ReportServerTests {
    @Test(arguments: TestEngine.allCases) func reportsInEveryFormatAgreeWithTheCLI(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await server.store().apiKeys.create(name: "analyst").key
        let auth: HTTPFields = [.authorization: "Bearer \(key)"]
        var simulation = Simulation(seed: 5, key: LiveServer.networkKey, keyID: "network/0")
        let bodies = try (0..<150).map { _ in try simulation.next().body }
        try await server.run { client in
            for body in bodies {
                let response = try await client.execute(uri: "/postbacks", method: .post, body: ByteBuffer(bytes: body))
                #expect(response.status == .ok)
            }
            let json = try await client.execute(uri: "/v1/reports?by=campaign,window&from=2026-01-01", method: .get, headers: auth)
            #expect(json.status == .ok)
            guard case .array(let rows) = json.json?["rows"] else { Issue.record("no rows"); return }
            #expect(!rows.isEmpty)
            // The CLI on the same file gives the same numbers.
            let cli = try await countersign(["report", "--database", server.settings.database, "--by", "campaign,window", "--from", "2026-01-01", "--format", "json"])
            #expect(cli.status == 0, "\(cli.stderr)")
            #expect(try JSONParser.parse(Array(cli.stdout.utf8)).object?["rows"] == .array(rows))

            let csv = try await client.execute(uri: "/v1/reports?by=campaign,window&from=2026-01-01", method: .get,
                                               headers: [.authorization: "Bearer \(key)", .accept: "text/csv"])
            #expect(csv.headers[.contentType]?.hasPrefix("text/csv") == true)
            let lines = String(buffer: csv.body).split(separator: "\r\n")
            #expect(lines.first?.hasPrefix("campaign,window,currency,postbacks,counted,installs,re_engagements,install_postbacks") == true)
            #expect(lines.count == rows.count + 1)

            let ndjson = try await client.execute(uri: "/v1/reports?by=day&format=ndjson", method: .get, headers: auth)
            #expect(ndjson.headers[.contentType] == "application/x-ndjson")
            #expect(ndjson.headers[.init("Countersign-Time-Zone")!] == "UTC")
            // Every answer states the zone of its days.
            let local = try await client.execute(uri: "/v1/reports?by=day&tz=America/New_York", method: .get, headers: auth)
            #expect(local.json?["time_zone"] == .string("America/New_York"))
            #expect(local.headers[.init("Countersign-Time-Zone")!] == "America/New_York")
            let badZone = try await client.execute(uri: "/v1/reports?by=day&tz=EST", method: .get, headers: auth)
            #expect(badZone.json?["message"] == .string("tz: must be an IANA time zone name such as UTC, Europe/Berlin or America/New_York"))
            #expect(String(buffer: ndjson.body).split(separator: "\n").allSatisfy { (try? JSONParser.parse(Array($0.utf8)).object) != nil })

            let bad = try await client.execute(uri: "/v1/reports?by=campaign;drop", method: .get, headers: auth)
            #expect(bad.status == .badRequest)
            #expect(bad.json?["error"] == .string("bad_parameter"))
            #expect(bad.json?["message"]?.string?.hasPrefix("by: unknown dimension") == true)
            let noKey = try await client.execute(uri: "/v1/reports", method: .get)
            #expect(noKey.status == .unauthorized)

            var after = "0"
            var total = 0
            while true {
                let page = try await client.execute(uri: "/v1/conversions?limit=40&after=\(after)", method: .get, headers: auth)
                guard case .array(let conversions) = page.json?["rows"] else { Issue.record("no conversions"); return }
                total += conversions.count
                guard let next = page.headers[.init("Next-After")!] else { break }
                after = next
            }
            let counted = try await server.store().scalar("SELECT count(*) FROM postbacks WHERE countable = 1", as: Int.self)
            #expect(total == counted)
        }
        let table = try await countersign(["report", "--database", server.settings.database, "--by", "protocol,day", "--tz", "Europe/Berlin"])
        #expect(table.stdout.hasPrefix("protocol"))
        #expect(table.stdout.hasSuffix("(days and weeks by arrival day, in Europe/Berlin)\n"))
        #expect(try await countersign(["report", "--database", server.settings.database, "--by", "nonsense"]).status == 2)
    }
}

/// The CSV export path writes the same rows as the JSON one.
@Suite struct ConversionExportTests {
    @Test(arguments: TestEngine.allCases) func csvAndJSONPagesAgree(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await server.store().apiKeys.create(name: "export").key
        var simulation = Simulation(seed: 8, key: LiveServer.networkKey, keyID: "network/0")
        let bodies = try (0..<60).map { _ in try simulation.next().body }
        try await server.run { client in
            for body in bodies { _ = try await client.execute(uri: "/postbacks", method: .post, body: ByteBuffer(bytes: body)) }
            let json = try await client.execute(uri: "/v1/conversions?limit=25", method: .get, headers: [.authorization: "Bearer \(key)"])
            let csv = try await client.execute(uri: "/v1/conversions?limit=25&format=csv", method: .get, headers: [.authorization: "Bearer \(key)"])
            #expect(json.headers[.init("Next-After")!] == csv.headers[.init("Next-After")!])
            guard case .array(let rows) = json.json?["rows"] else { Issue.record("no rows"); return }
            let lines = String(buffer: csv.body).split(separator: "\r\n", omittingEmptySubsequences: false).dropLast()
            #expect(lines.count == rows.count + 1)
            let header = lines.first!.split(separator: ",").map(String.init)
            for (row, line) in zip(rows, lines.dropFirst()) {
                let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                let object = try #require(row.object)
                for (column, field) in zip(header, fields) {
                    let value = object[column] ?? .null
                    let expected: String = switch value {
                    case .null: ""
                    case .string(let text): text
                    default: value.serialized
                    }
                    #expect(field == expected, "\(column)")
                }
            }
        }
    }
}

/// `GET /v1/conversions/export` and `countersign export`: one streamed answer with exactly the rows of every page of
/// `GET /v1/conversions` for the same filters (issue 28, item 5).
@Suite struct StreamedExportTests {
    @Test(arguments: TestEngine.allCases) func theExportIsEveryPageAndTheCLISaysTheSame(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await server.store().apiKeys.create(name: "export").key
        let auth: HTTPFields = [.authorization: "Bearer \(key)"]
        var simulation = Simulation(seed: 9, key: LiveServer.networkKey, keyID: "network/0")
        let bodies = try (0..<80).map { _ in try simulation.next().body }
        let exported = Mutex("")
        try await server.run { client in
            for body in bodies { _ = try await client.execute(uri: "/postbacks", method: .post, body: ByteBuffer(bytes: body)) }
            for filters in ["include_uncounted=true", "protocol=aak"] {
                var pages = "", after = "0", rows: [JSONValue] = []
                while true {
                    let csv = try await client.execute(uri: "/v1/conversions?\(filters)&format=csv&limit=9&after=\(after)", method: .get, headers: auth)
                    let text = String(buffer: csv.body)
                    pages += pages.isEmpty ? text : String(text[text.range(of: "\r\n")!.upperBound...])
                    let json = try await client.execute(uri: "/v1/conversions?\(filters)&limit=9&after=\(after)", method: .get, headers: auth)
                    if case .array(let page) = json.json?["rows"] { rows += page }
                    guard let next = csv.headers[.init("Next-After")!] else { break }
                    after = next
                }
                let export = try await client.execute(uri: "/v1/conversions/export?\(filters)", method: .get, headers: auth)
                #expect(export.status == .ok && export.headers[.contentType] == "text/csv; charset=utf-8")
                #expect(String(buffer: export.body) == pages, "\(filters)")
                #expect(rows.count > 9, "more than one page")
                let ndjson = try await client.execute(uri: "/v1/conversions/export?\(filters)&format=ndjson", method: .get, headers: auth)
                #expect(try String(buffer: ndjson.body).split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) } == rows, "\(filters)")
                if filters == "protocol=aak" { exported.withLock { $0 = pages } }
            }
            let json = try await client.execute(uri: "/v1/conversions/export?format=json", method: .get, headers: auth)
            #expect(json.status == .badRequest && json.json?["error"] == .string("bad_parameter"))
            #expect(try await client.execute(uri: "/v1/conversions/export", method: .get).status == .unauthorized)
        }
        let cli = try await countersign(["export", "--protocol", "aak", "--database", server.settings.database])
        #expect(cli.status == 0 && cli.stdout == exported.withLock { $0 })
    }
}

/// Names given over HTTP and with the CLI show in JSON, CSV and table reports (issue 13, item 6).
@Suite struct NameServerTests {
    @Test(arguments: TestEngine.allCases) func namesGivenOverHTTPAndTheCLIShowInJSONCSVAndTables(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await server.store().apiKeys.create(name: "analyst").key
        let auth: HTTPFields = [.authorization: "Bearer \(key)"]
        try await server.run { client in
            for (index, network) in ["alpha.adattributionkit", "beta.adattributionkit"].enumerated() {
                let response = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("names-\(index)") {
                    $0.adNetworkID = network
                    $0.sourceIdentifier = "1231"
                })
                #expect(response.status == .ok)
            }
            let network = try await client.execute(uri: "/v1/ad-networks/alpha.adattributionkit", method: .put, headers: auth,
                                                   body: ByteBuffer(string: #"{"name": "Alpha Media"}"#))
            #expect(network.status == .ok)
            // A name that looks like a formula is data; CSV neutralises it.
            let campaign = try await client.execute(uri: "/v1/names/10738027756/beta.adattributionkit/campaign/12", method: .put, headers: auth,
                                                    body: ByteBuffer(string: #"{"name": "=Beta spring"}"#))
            #expect(campaign.status == .ok)
            let tooMany = try await client.execute(uri: "/v1/names/10738027756/beta.adattributionkit/campaign/123", method: .put, headers: auth,
                                                   body: ByteBuffer(string: #"{"name": "x"}"#))
            #expect(tooMany.status == .badRequest)
            #expect(tooMany.json?["message"] == .string("digits: a campaign is named by 2 digits, such as 12"))
            let noBody = try await client.execute(uri: "/v1/ad-networks/alpha.adattributionkit", method: .put, headers: auth, body: ByteBuffer(string: "Alpha"))
            #expect(noBody.json?["error"] == .string("bad_parameter"))
            let badLevel = try await client.execute(uri: "/v1/names/10738027756/beta.adattributionkit/adgroup/1", method: .put, headers: auth,
                                                    body: ByteBuffer(string: #"{"name": "x"}"#))
            #expect(badLevel.json?["message"] == .string("level: must be campaign, ad_group, creative"))

            let networks = try await client.execute(uri: "/v1/ad-networks", method: .get, headers: auth)
            let listed = String(buffer: networks.body)
            #expect(listed.contains(#""name":"Alpha Media""#) && listed.contains(#""name":"Apple Ads","built_in":true"#), "\(listed)")
            let names = try await client.execute(uri: "/v1/names/10738027756", method: .get, headers: auth)
            #expect(String(buffer: names.body).contains(#""digits":"12","name":"=Beta spring""#))

            let json = try await client.execute(uri: "/v1/reports?by=ad_network_name,campaign_name", method: .get, headers: auth)
            guard case .array(let rows) = json.json?["rows"] else { Issue.record("no rows"); return }
            let pairs = Set(rows.compactMap { row in row.object.map { "\($0["ad_network_name"]?.string ?? "-")/\($0["campaign_name"]?.string ?? "-")" } })
            #expect(pairs == ["Alpha Media/12", "beta.adattributionkit/=Beta spring"], "\(pairs)")
            let csv = try await client.execute(uri: "/v1/reports?by=ad_network_name,campaign_name&format=csv", method: .get, headers: auth)
            let text = String(buffer: csv.body)
            #expect(text.contains("Alpha Media,12,") && text.contains("beta.adattributionkit,\"'=Beta spring\","), "\(text)")

            #expect(try await client.execute(uri: "/v1/ad-networks/alpha.adattributionkit", method: .delete, headers: auth).status == .noContent)
            let again = try await client.execute(uri: "/v1/ad-networks/alpha.adattributionkit", method: .delete, headers: auth)
            #expect(again.status == .notFound)
            #expect(again.json?["error"] == .string("name_not_found"))
        }
        let database = server.settings.database
        #expect(try await countersign(["names", "set-network", "beta.adattributionkit", "Beta Ads", "--database", database]).status == 0)
        let table = try await countersign(["report", "--database", database, "--by", "ad_network_name,campaign_name"])
        #expect(table.stdout.contains("Beta Ads") && table.stdout.contains("=Beta spring"), "\(table.stdout)")
        let listed = try await countersign(["names", "networks", "--database", database, "--format", "csv"])
        #expect(listed.stdout.contains("beta.adattributionkit,Beta Ads,given") && listed.stdout.contains("com.apple.ads,Apple Ads,built in"))
        let wrong = try await countersign(["names", "set", "--app", "10738027756", "--ad-network", "beta.adattributionkit", "--level", "campaign", "--digits", "1", "x", "--database", database])
        #expect(wrong.status == 2)
        #expect(wrong.stderr.contains("--digits: a campaign is named by 2 digits, such as 12"), "\(wrong.stderr)")
        let badLevel = try await countersign(["names", "set", "--app", "1", "--ad-network", "beta.adattributionkit", "--level", "group", "--digits", "1", "x", "--database", database])
        #expect(badLevel.stderr.contains("--level must be campaign, ad_group, creative"))
    }
}

/// Money over HTTP and the CLI (issue 13, item 1): apps in USD and EUR stay apart in JSON and CSV, with exact sums.
@Suite struct CurrencyServerTests {
    @Test(arguments: TestEngine.allCases) func csvAndJSONKeepCurrenciesApartWithExactSums(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let store = try server.store()
        let key = try await store.apiKeys.create(name: "analyst").key
        for (app, schema) in [(1108187390 as AppID, "game"), (525463029, "subscription")] {
            guard case .stored = try await store.schemas.put(app: app, document: try ExampleSchema.document(schema)) else { Issue.record("\(schema)"); return }
        }
        try await server.run { client in
            // Game value 2 is 0.99-1.99 USD; subscription value 10 is 4.99 EUR. Thirty of each: sums a double would blur.
            for index in 0..<30 {
                for (app, value) in [(Int64(1108187390), 2), (Int64(525463029), 10)] {
                    let response = try await client.execute(uri: aakPath, method: .post, body: try LiveServer.aak("money-\(app)-\(index)") {
                        $0.advertisedItemID = app
                        $0.conversionValue = value
                    })
                    #expect(response.status == .ok)
                }
            }
            let csv = try await client.execute(uri: "/v1/reports?format=csv", method: .get, headers: [.authorization: "Bearer \(key)"])
            let lines = String(buffer: csv.body).split(separator: "\r\n")
            #expect(lines.first?.hasPrefix("currency,postbacks,") == true)
            #expect(lines.contains { $0.hasPrefix("EUR,30,") && $0.contains(",149.70,149.70,149.70,") }, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("USD,30,") && $0.contains(",29.70,59.70,44.70,") }, "\(lines)")
            #expect(lines.count == 3)
            let json = try await client.execute(uri: "/v1/reports?by=app", method: .get, headers: [.authorization: "Bearer \(key)"])
            let text = String(buffer: json.body)
            #expect(text.contains(#""app":525463029,"currency":"EUR""#) && text.contains(#""revenue_min":149.70"#), "\(text)")
        }
        let cli = try await countersign(["report", "--database", server.settings.database, "--currency", "USD", "--format", "csv"])
        #expect(cli.stdout.split(separator: "\r\n").dropFirst().map { $0.prefix(4) } == ["USD,"], "\(cli.stdout)")
    }
}

/// Issue 49, finding 7: every day of every month is a date the API takes (the OpenAPI patterns allowed the 1st to the
/// 28th only), and a day that does not exist is refused.
@Suite struct ReportDateTests {
    @Test func everyRealDayIsAcceptedAndNoOtherIs() async throws {
        let server = LiveServer()
        let key = try await server.store().apiKeys.create(name: "analyst").key
        let auth: HTTPFields = [.authorization: "Bearer \(key)"]
        try await server.run { client in
            for (from, to) in [("2026-11-29", "2026-11-30"), ("2026-12-31", "2027-01-01"), ("2028-02-29", "2028-03-01"), ("2026-01-30", "2026-01-31T23:00")] {
                let response = try await client.execute(uri: "/v1/reports?by=day&from=\(from)&to=\(to)", method: .get, headers: auth)
                #expect(response.status == .ok, "\(from)..\(to): \(String(buffer: response.body))")
            }
            for day in ["2026-02-29", "2026-11-31", "2026-04-31"] {
                let response = try await client.execute(uri: "/v1/reports?by=day&from=\(day)", method: .get, headers: auth)
                #expect(response.status == .badRequest, "\(day): \(String(buffer: response.body))")
            }
        }
    }
}
