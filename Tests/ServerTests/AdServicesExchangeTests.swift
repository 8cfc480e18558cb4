import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Testing
import AdServices
import JWS
import Postback
import Store
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// AdServices tokens: queued over HTTP, exchanged with a scripted stand-in for Apple's API, stored once.
@Suite struct AdServicesExchangeTests {
    static let detailed = #"{"attribution": true, "orgId": 40669820, "campaignId": 542370539, "conversionType": "Download", "clickDate": "2024-10-08T17:17Z", "claimType": "Click", "adGroupId": 542317095, "countryOrRegion": "US", "keywordId": 87675432, "adId": 542317136, "supplyPlacement": "APPSTORE_SEARCH_RESULTS"}"#
    static let standard = #"{"attribution": true, "orgId": 40669820, "campaignId": 542370540, "conversionType": "Redownload", "claimType": "Impression", "adGroupId": 542317095, "countryOrRegion": "GB", "adId": 542317136}"#
    static let notAttributed = #"{"attribution": false}"#

    /// Short delays so the schedule plays out in a second or two; the shape is Apple's.
    static func server(apiURL: String, engine: TestEngine = .sqlite, database: String? = nil, interval: TimeInterval = 0.3, timeout: TimeInterval = 3,
                       lifetime: TimeInterval = 86400) -> LiveServer {
        var server = LiveServer(engine: engine)
        if let database { server.settings.database = database }
        server.settings.adServicesURL = apiURL
        server.settings.adServicesPolicy.notFoundInterval = interval
        server.settings.adServicesPolicy.initialBackoff = interval
        server.settings.adServicesPolicy.requestTimeout = timeout
        server.settings.adServicesPolicy.tokenLifetime = lifetime
        return server
    }

    /// Waits until no job is pending or retrying.
    static func waitForJobs(_ server: LiveServer, seconds: TimeInterval = 30) async throws {
        let done = try await eventually(within: seconds) {
            try await server.scalar("SELECT count(*) FROM adservices_jobs WHERE state IN ('pending', 'retrying')", as: Int.self) == 0
        }
        #expect(done, "jobs still open after \(seconds) s")
    }

    static func job(_ server: LiveServer, token: String) async throws -> SQLRow {
        let hash = Data(sha256(Array(token.utf8)))
        return try #require(try await server.rows("SELECT * FROM adservices_jobs WHERE token_sha256 = ?", [hash]).first)
    }

    static func submit(_ client: any TestClientProtocol, _ body: String, contentType: String = "text/plain") async throws -> TestResponse {
        try await client.execute(uri: "/v1/adservices/tokens", method: .post, headers: [.contentType: contentType], body: ByteBuffer(string: body))
    }

    @Test(arguments: TestEngine.allCases) func everyScriptedAnswerIsHandledByApplesRules(engine: TestEngine) async throws {
        let standIn = AppleAPIStandIn([
            "detailed": [.ok(Self.detailed)],
            "standard": [.ok(Self.standard)],
            "unattributed": [.ok(Self.notAttributed)],
            "invalid": [.status(400)],
            "late": [.status(404), .ok(Self.detailed)],
            "missing": [.status(404)],
            "flaky": [.status(500), .ok(Self.standard)],
            "slow": [AppleAPIStandIn.Answer(status: 200, body: Self.detailed, hold: 1)],
            "old": [.status(404)],
        ])
        let tokens = ["detailed", "standard", "unattributed", "invalid", "late", "missing", "flaky", "slow"]
        try await standIn.serve { url in
            let server = Self.server(apiURL: url, engine: engine)
            try await server.run { client in
                for token in tokens {
                    let response = try await Self.submit(client, token)
                    #expect(response.status == .accepted)
                    #expect(response.json?["state"] == .string("pending"))
                }
                let old = #"{"token": "old", "app": "1108187390", "install-id": "i-old", "token-created-at": "\#(Timestamp.format(Date().addingTimeInterval(-25 * 3600)))"}"#
                #expect(try await Self.submit(client, old, contentType: "application/json").status == .accepted)
                try await Self.waitForJobs(server)
                // A token sent again is the same job, and is not exchanged again.
                let again = try await Self.submit(client, "detailed")
                #expect(again.status == .ok)
                #expect(again.json?["status"] == .string("known"))
                #expect(again.json?["state"] == .string("done"))
            }
            for token in tokens {
                for call in standIn.calls(for: token) {
                    #expect(call.method == "POST")
                    #expect(call.path == "/api/v1/" || call.path == "/api/v1")
                    #expect(call.contentType == "text/plain")
                }
            }
            let expectedCalls = ["detailed": 1, "standard": 1, "unattributed": 1, "invalid": 1, "late": 2, "missing": 3, "flaky": 2, "slow": 1, "old": 0]
            for (token, count) in expectedCalls { #expect(standIn.calls(for: token).count == count, "\(token)") }
            for token in ["late", "missing", "flaky"] {
                for gap in standIn.gaps(for: token) { #expect(gap >= 0.3, "\(token) retried after \(gap) s") }
            }
            let expectedStates = ["detailed": "done", "standard": "done", "unattributed": "done", "invalid": "failed", "late": "done",
                                  "missing": "failed", "flaky": "done", "slow": "done", "old": "failed"]
            for (token, state) in expectedStates {
                let job = try await Self.job(server, token: token)
                #expect(try job.get("state", as: String.self) == state, "\(token)")
                #expect(try job.get("token", as: String?.self) == nil, "the token is forgotten once its job ends")
            }
            #expect(try await Self.job(server, token: "invalid").get("failure_reason", as: String.self) == "token_invalid")
            #expect(try await Self.job(server, token: "missing").get("failure_reason", as: String.self) == "not_found")
            #expect(try await Self.job(server, token: "old").get("failure_reason", as: String.self) == "token_expired")
            #expect(try await Self.job(server, token: "flaky").get("server_failures", as: Int.self) == 1)
            let records = try await server.rows("""
                SELECT j.token_sha256, r.* FROM attribution_records r JOIN adservices_jobs j ON j.record_id = r.id ORDER BY r.id
                """)
            #expect(records.count == 6)
            func record(_ token: String) throws -> SQLRow {
                try #require(records.first { (try? $0.get("token_sha256", as: Data.self)) == Data(sha256(Array(token.utf8))) })
            }
            #expect(try record("detailed").get("detailed", as: Bool.self) == true)
            #expect(try record("detailed").get("click_date", as: String.self) == "2024-10-08T17:17:00.000Z")
            #expect(try record("detailed").get("source", as: String.self) == "adservices")
            #expect(try record("standard").get("detailed", as: Bool.self) == false)
            #expect(try record("standard").get("claim_type", as: String.self) == "Impression")
            #expect(try record("standard").get("conversion_type", as: String.self) == "redownload")
            #expect(try record("unattributed").get("attribution", as: Bool.self) == false)
            #expect(try record("late").get("campaign_id", as: Int64.self) == 542370539)
            #expect(try record("flaky").get("country_or_region", as: String.self) == "GB")
            #expect(try record("slow").get("keyword_id", as: Int64.self) == 87675432)
        }
    }

    @Test func serverFailuresBackOffUntilTheTokenExpires() async throws {
        let standIn = AppleAPIStandIn([
            "down": [.status(500)],
            "hanging": [AppleAPIStandIn.Answer(status: 200, body: Self.detailed, hold: 2)],
        ])
        try await standIn.serve { url in
            let server = Self.server(apiURL: url, interval: 0.2, timeout: 0.5, lifetime: 2.5)
            try await server.run { client in
                for token in ["down", "hanging"] { #expect(try await Self.submit(client, token).status == .accepted) }
                try await Self.waitForJobs(server)
            }
            for token in ["down", "hanging"] {
                let gaps = standIn.gaps(for: token)
                #expect(gaps.count >= 2, "\(token): \(gaps)")
                // 0.2 s, then 0.4 s, doubling (plus the 0.5 s timeout for the hanging call).
                for (index, gap) in gaps.enumerated() { #expect(gap >= 0.2 * pow(2, Double(index)), "\(token): \(gaps)") }
                let job = try await Self.job(server, token: token)
                #expect(try job.get("state", as: String.self) == "failed")
                #expect(try job.get("failure_reason", as: String.self) == "token_expired")
                #expect(try job.get("server_failures", as: Int.self) == standIn.calls(for: token).count)
            }
            #expect(try await Self.job(server, token: "hanging").get("last_answer", as: String.self) == "network")
        }
    }

    @Test(arguments: TestEngine.allCases) func jobsLeftOpenWhenTheServerStopsFinishOnceAfterRestart(engine: TestEngine) async throws {
        let database = try engine.freshDatabase()
        let tokens = (1...6).map { "restart\($0)" }
        // First run: Apple cannot be reached, so every job is retrying when the server stops.
        let unreachable = Self.server(apiURL: "http://127.0.0.1:9/api/v1/", engine: engine, database: database, interval: 0.5)
        try await unreachable.run { client in
            for token in tokens.prefix(4) { #expect(try await Self.submit(client, token).status == .accepted) }
            _ = try await eventually(within: 20) {
                try await unreachable.scalar("SELECT count(*) FROM adservices_jobs WHERE state = 'retrying'", as: Int.self) == 4
            }
        }
        // Two more: one never tried, one claimed by a process that died mid-exchange (its lease lapses).
        let store = try unreachable.store()
        defer { store.close() }
        _ = try await store.tokenJobs.enqueue(TokenSubmission(token: tokens[4]), maximumOpen: 100)
        _ = try await store.tokenJobs.enqueue(TokenSubmission(token: tokens[5]), maximumOpen: 100)
        let claimed = try await store.tokenJobs.claimDue(now: Date(), limit: 1, lease: 1)
        #expect(claimed.count == 1)
        let states = try await unreachable.column("SELECT state FROM adservices_jobs ORDER BY id", as: String.self)
        #expect(states == ["retrying", "retrying", "retrying", "retrying", "pending", "pending"])

        let standIn = AppleAPIStandIn(Dictionary(uniqueKeysWithValues: tokens.map { ($0, [AppleAPIStandIn.Answer.ok(Self.detailed)]) }))
        try await standIn.serve { url in
            let server = Self.server(apiURL: url, engine: engine, database: database, interval: 0.5)
            try await server.run { _ in try await Self.waitForJobs(server) }
            for token in tokens { #expect(standIn.calls(for: token).count == 1, "\(token)") }
            let perJob = try await server.column("SELECT count(r.id) FROM adservices_jobs j LEFT JOIN attribution_records r ON r.job_id = j.id GROUP BY j.id",
                                                 as: Int.self)
            #expect(perJob == Array(repeating: 1, count: 6))
            #expect(try await server.scalar("SELECT count(*) FROM adservices_jobs WHERE state = 'done'", as: Int.self) == 6)
        }
    }

    @Test(arguments: TestEngine.allCases) func badTokensGetSpecificErrors(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        try await server.run { client in
            for (body, contentType, fragment) in [("", "text/plain", "empty"), ("QU JD", "text/plain", "no spaces"),
                                                  (#"{"token": "QUJD", "extra": 1}"#, "application/json", "extra"), ("x", "image/png", "image/png")] {
                let response = try await Self.submit(client, body, contentType: contentType)
                #expect(response.status == .badRequest)
                #expect(response.json?["error"] == .string("invalid_token"))
                #expect(response.json?["message"]?.string?.contains(fragment) == true, "\(String(describing: response.json))")
            }
            let oversize = try await Self.submit(client, String(repeating: "A", count: 70_000))
            #expect(oversize.status == .contentTooLarge)
        }
        #expect(try await server.scalar("SELECT count(*) FROM adservices_jobs", as: Int.self) == 0)
    }

    @Test(arguments: TestEngine.allCases) func jobsAreListedOverHTTPWithAnAPIKey(engine: TestEngine) async throws {
        let standIn = AppleAPIStandIn(["good": [.ok(Self.detailed)], "bad": [.status(400)]])
        try await standIn.serve { url in
            let server = Self.server(apiURL: url, engine: engine)
            let key = try await TestStore.open(StoreSettings(location: try DatabaseLocation(server.settings.database))).apiKeys.create(name: "ops").key
            try await server.run { client in
                for token in ["good", "bad"] { _ = try await Self.submit(client, token) }
                try await Self.waitForJobs(server)
                let auth: HTTPFields = [.authorization: "Bearer \(key)"]
                #expect(try await client.execute(uri: "/v1/adservices/jobs", method: .get).status == .unauthorized)
                let open = try await client.execute(uri: "/v1/adservices/jobs", method: .get, headers: auth)
                #expect(open.json?["counts"]?.object?["done"] == .number("1"))
                #expect(open.json?["counts"]?.object?["failed"] == .number("1"))
                guard case .array(let rows) = open.json?["rows"] else { Issue.record("no rows"); return }
                #expect(rows.compactMap { $0.object?["failure_reason"]?.string } == ["token_invalid"], "only the failed job is listed by default")
                let done = try await client.execute(uri: "/v1/adservices/jobs?state=done&format=csv", method: .get, headers: auth)
                let lines = String(buffer: done.body).split(separator: "\r\n")
                #expect(lines.count == 2)
                #expect(lines.first?.hasPrefix("id,state,") == true)
                #expect(lines.last?.contains(",done,") == true)
                let bad = try await client.execute(uri: "/v1/adservices/jobs?state=stuck", method: .get, headers: auth)
                #expect(bad.status == .badRequest)
                #expect(bad.json?["error"] == .string("bad_parameter"))
            }
        }
    }

    @Test func defaultsAreApples() {
        let settings = ServerSettings()
        #expect(settings.adServicesURL == "https://api-adservices.apple.com/api/v1/")
        #expect(settings.adServicesPolicy == RetryPolicy())
    }
}

/// Analysts: the status command and the grouped report agree with the stored records.
@Suite struct AppleAdsReportTests {
    @Test func reportGroupsByCampaignAndCountryAndLeavesTestPayloadsOut() async throws {
        let database = Checkout.temporaryDirectory() + "/countersign.sqlite"
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        let bodies = [
            AdServicesExchangeTests.detailed, AdServicesExchangeTests.detailed, AdServicesExchangeTests.standard,
            AdServicesExchangeTests.notAttributed,
            #"{"attribution": true, "orgId": 1234567890, "campaignId": 1234567890, "conversionType": "Download", "clickDate": "2020-04-08T17:17Z", "claimType": "Click", "adGroupId": 1234567890, "countryOrRegion": "US", "keywordId": 123222, "adId": 542317136}"#,
        ]
        // Each record arrives the way AdServices records do: a token job whose exchange Apple answered.
        for (index, body) in bodies.enumerated() {
            let record = try AttributionRecord.decode(adServicesResponse: Array(body.utf8)).get()
            _ = try await store.tokenJobs.enqueue(TokenSubmission(token: "dG9rZW4\(index)", app: "1108187390"), maximumOpen: 100)
            let job = try #require(try await store.tokenJobs.claimDue(now: Date(), limit: 1, lease: 60).first)
            #expect(try await store.tokenJobs.finishAttempt(job, answer: "200", notFound: false, serverFailure: false, update: .store(record, body: Array(body.utf8))))
        }
        let query = try AttributionReportQuery.parse([("by", "campaign,country")])
        let table = try await store.attributions.report(query)
        #expect(table.columns == ["campaign_id", "campaign_name", "country_or_region"] + AttributionReportQuery.metrics)
        let rows = table.rows.map { Dictionary(uniqueKeysWithValues: zip(table.columns, $0)) }
        #expect(rows.count == 3)
        let detailedRow = try #require(rows.first { $0["campaign_id"] == .number("542370539") })
        #expect(detailedRow["records"] == .number("2"))
        #expect(detailedRow["detailed"] == .number("2"))
        #expect(detailedRow["clicks"] == .number("2"))
        #expect(detailedRow["downloads"] == .number("2"))
        let standardRow = try #require(rows.first { $0["campaign_id"] == .number("542370540") })
        #expect(standardRow["country_or_region"] == .string("GB"))
        #expect(standardRow["impressions"] == .number("1"))
        #expect(standardRow["redownloads"] == .number("1"))
        let unattributed = try #require(rows.first { $0["campaign_id"] == .null })
        #expect(unattributed["not_attributed"] == .number("1"))
        // A group of non-attributed records only counts 0 downloads, clicks and impressions, not null (issue 13).
        for metric in ["attributed", "downloads", "redownloads", "preorders", "clicks", "impressions"] {
            #expect(unattributed[metric] == .number("0"), "\(metric)")
        }
        let withTest = try await store.attributions.report(try AttributionReportQuery.parse([("by", "campaign"), ("include_test", "true")]))
        #expect(withTest.rows.count == 4)
        #expect(throws: QueryProblem.self) { try AttributionReportQuery.parse([("by", "campaign;DROP")]) }
        // Days in a time zone: 23:30 UTC on 1 November is 2 November in Berlin (UTC+1) and 1 November in New York.
        try await store.engine.write { db in try db.execute("UPDATE attribution_records SET received_at = '2026-11-01T23:30:00.000Z'", []) }
        for (zone, day) in [("UTC", "2026-11-01"), ("Europe/Berlin", "2026-11-02"), ("America/New_York", "2026-11-01")] {
            let days = try await store.attributions.report(try AttributionReportQuery.parse([("by", "day"), ("tz", zone)]))
            #expect(days.rows.map { $0[0] } == [.string(day)], "\(zone)")
            #expect(days.timeZone == zone)
        }
        let berlinDay = try await store.attributions.report(try AttributionReportQuery.parse([("tz", "Europe/Berlin"), ("from", "2026-11-02")]))
        #expect(berlinDay.rows.first?[0] == .number("4"), "from is Berlin midnight, 23:00 UTC")

        let cli = try await countersign(["adservices", "report", "--database", database, "--by", "org,claim_type", "--format", "csv"])
        #expect(cli.status == 0)
        #expect(cli.stdout.split(separator: "\r\n").first == "org_id,org_name,claim_type,records,attributed,not_attributed,downloads,redownloads,preorders,detailed,clicks,impressions")
        #expect(cli.stdout.contains("40669820,,Click,2,2,0,2,0,0,2,2,0"))
        let bad = try await countersign(["adservices", "report", "--database", database, "--by", "colour"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("unknown dimension"))
    }

    @Test func statusCountsAndListsOpenAndFailedJobs() async throws {
        let database = Checkout.temporaryDirectory() + "/countersign.sqlite"
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        for token in ["one", "two", "three"] { _ = try await store.tokenJobs.enqueue(TokenSubmission(token: token, app: "1108187390"), maximumOpen: 100) }
        let claimed = try await store.tokenJobs.claimDue(now: Date(), limit: 2, lease: 10)
        #expect(claimed.map(\.token) == ["one", "two"])
        #expect(try await store.tokenJobs.claimDue(now: Date(), limit: 5, lease: 10).map(\.token) == ["three"], "a claimed job is not handed out twice")
        #expect(try await store.tokenJobs.finishAttempt(claimed[0], answer: "400", notFound: false, serverFailure: false, update: .fail(.tokenInvalid)))
        #expect(try await store.tokenJobs.finishAttempt(claimed[1], answer: "404", notFound: true, serverFailure: false, update: .retry(after: 5)))
        let recordedTwice = try await store.tokenJobs.finishAttempt(claimed[1], answer: "404", notFound: true, serverFailure: false, update: .retry(after: 5))
        #expect(!recordedTwice, "a finished claim cannot be recorded twice")
        let table = try await countersign(["adservices", "status", "--database", database])
        #expect(table.status == 0)
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.first == "pending=1 retrying=1 done=0 failed=1")
        #expect(lines.count == 5)
        #expect(lines.contains { $0.contains("failed") && $0.contains("token_invalid") })
        #expect(lines.contains { $0.contains("retrying") && $0.contains("404") })
        let json = try await countersign(["adservices", "status", "--database", database, "--format", "json"])
        let document = try #require(try JSONParser.parse(Array(json.stdout.utf8)).object)
        #expect(document["counts"]?.object?["failed"] == .number("1"))
        #expect(!json.stdout.contains("\"one\""), "tokens are never listed")
    }
}
