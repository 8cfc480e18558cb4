import CountersignServer
import Foundation
import JWS
import MetricsTestKit
import Postback
import PostbackMint
import Spend
@testable import Store
import Testing
import TestSupport

/// Spend and claims import (issue 26, item 2): a file imports whole or not at all, every bad line named; the same
/// file twice changes nothing; a later import of a day replaces it; each import keeps who, when and which file.
@Suite struct SpendImportTests {
    static let header = "date,app,ad_network,campaign,country,impressions,clicks,installs,re_engagements,spend,currency\n"

    static func rows(_ lines: [String]) -> [UInt8] { Array((header + lines.joined(separator: "\n") + "\n").utf8) }

    func problems(_ bytes: [UInt8], format: SpendFormat = .generic, defaults: SpendDefaults = SpendDefaults()) -> SpendFileProblems? {
        if case .failure(let problems) = SpendFile.read(bytes, format: format, defaults: defaults) { return problems }
        return nil
    }

    @Test func everyBadLineIsNamedWithItsColumn() throws {
        let file = Self.rows([
            "2026-11-20,1108187390,example123.skadnetwork,10,US,1000,50,20,1,120.50,USD",
            "2026-11-31,1108187390,example123.skadnetwork,11,US,1000,50,20,1,120.50,USD",
            "2026-11-20,0,example123.skadnetwork,12,US,1000,50,20,1,120.50,USD",
            "2026-11-20,1108187390,Example.Network,13,US,1000,50,20,1,120.50,USD",
            "2026-11-20,1108187390,example123.skadnetwork,14,USA,1000,50,20,1,120.50,USD",
            "2026-11-20,1108187390,example123.skadnetwork,15,US,-5,50,20,1,120.50,USD",
            "2026-11-20,1108187390,example123.skadnetwork,16,US,1000,50,20,1,-120.50,USD",
            "2026-11-20,1108187390,example123.skadnetwork,17,US,1000,50,20,1,\"1,120.50\",USD",
            "2026-11-20,1108187390,example123.skadnetwork,18,US,1000,50,20,1,120.50,ZZZ",
            "2026-11-20,1108187390,example123.skadnetwork,10,US,1,1,1,1,1,USD",
        ])
        let found = try #require(problems(file))
        #expect(found.total == 9)
        let named = found.problems.map { "\($0.line):\($0.column ?? "-")" }
        #expect(named == ["3:day", "4:app", "5:ad_network", "6:country", "7:impressions", "8:spend", "9:spend", "10:currency", "11:-"])
        #expect(found.problems.last?.message.contains("repeats line 2") == true)
    }

    @Test func wrongColumnsAreRefusedBeforeAnyRow() throws {
        let found = try #require(problems(Array("day,amount\n2026-11-20,5\n".utf8)))
        #expect(found.problems.first?.line == 1)
        #expect(found.problems.contains { $0.message.contains("an app column") })
        #expect(try #require(problems(Array("date,app,ad_network,spend\n2026-11-20,1,a.example,5\n".utf8))).problems.first?.message.contains("no currency") == true)
        #expect(problems([]) != nil)
        #expect(problems(Array(Self.header.utf8))?.problems.first?.message.contains("no rows") == true)
        // A quote left open names the line it starts on.
        #expect(problems(Self.rows(["2026-11-20,1108187390,example123.skadnetwork,\"10,US,1,1,1,1,1,USD"]))?.problems.first?.line == 2)
    }

    /// Every problem of a large file is counted, and the first `problemsListed` of them listed.
    @Test func aLargeFileIsReadAndItsProblemsCountedAndListed() throws {
        var text = Self.header
        text.reserveCapacity(14_000_000)
        for index in 0..<200_000 {
            let day = 1 + index % 28
            // Every 200th line has a negative spend.
            let spend = index % 200 == 199 ? "-1" : "12.5"
            text += "2026-02-\(day < 10 ? "0" : "")\(day),1108187390,example123.skadnetwork,\(index / 28),US,10,2,1,0,\(spend),USD\n"
        }
        let found = try #require(problems(Array(text.utf8)))
        #expect(found.total == 1000)
        #expect(found.problems.count == SpendFile.problemsListed)
        #expect(found.problems.first?.line == 201)
        #expect(found.problems.last?.line == 201 + 200 * (SpendFile.problemsListed - 1))
        #expect(found.problems.first?.column == "spend")
    }

    @Test func networksLayoutsAreRead() throws {
        let applovin = Array("day,campaign_store_id,campaign_id_external,country,impressions,clicks,installs,cost\n2026-11-20,1108187390,10,us,1000,40,12,88.25\n".utf8)
        guard case .success(let rows) = SpendFile.read(applovin, format: .applovin) else { Issue.record("refused"); return }
        #expect(rows == [SpendRow(day: "2026-11-20", app: 1_108_187_390, adNetwork: "ludvb6z3bs.skadnetwork", campaign: "10", country: "US", impressions: 1000,
                                  clicks: 40, claimedInstalls: 12, claimedReEngagements: nil, spendMicros: 88_250_000, currency: "USD", line: 2)])
        let apple = Array("Date,adamId,campaignId,countryOrRegion,impressions,taps,totalInstalls,localSpend,currency\n2026-11-20,1108187390,542370539,DE,500,30,9,41.5,EUR\n".utf8)
        guard case .success(let appleRows) = SpendFile.read(apple, format: .appleAds) else { Issue.record("refused"); return }
        #expect(appleRows.first?.adNetwork == "com.apple.ads")
        #expect(appleRows.first?.spendMicros == 41_500_000)
        #expect(appleRows.first?.currency == "EUR")
    }

    @Test(arguments: TestEngine.allCases) func importsAreWholeIdempotentAndReplaceTheirDays(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let november = Self.rows([
            "2026-11-20,1108187390,example123.skadnetwork,10,US,1000,50,20,1,120.50,USD",
            "2026-11-20,1108187390,example123.skadnetwork,11,,800,30,12,0,99.99,USD",
            "2026-11-21,1108187390,example123.skadnetwork,10,US,1200,60,25,2,130.00,USD",
        ])
        guard case .success(let rows) = SpendFile.read(november, format: .generic) else { Issue.record("refused"); return }
        let provenance = ImportProvenance(importedBy: "analyst", fileName: "november.csv", format: "generic", bytes: november)
        let first = try await store.spend.importSpend(rows, provenance: provenance)
        #expect(first.rows == 3)
        #expect(first.replaced == 0)
        func total() async throws -> [String] {
            try await store.column("SELECT day || ' ' || campaign || ' ' || claimed_installs || ' ' || spend_micros FROM spend ORDER BY day, campaign", as: String.self)
        }
        let once = try await total()
        // The same file again changes nothing but the import log.
        let again = try await store.spend.importSpend(rows, provenance: provenance)
        #expect(again.replaced == 3)
        #expect(try await total() == once)
        // A corrected day replaces that day (its campaign 11 row is gone), and leaves the other day alone.
        let correction = Self.rows(["2026-11-20,1108187390,example123.skadnetwork,10,US,1000,50,22,1,125.00,USD"])
        guard case .success(let fixed) = SpendFile.read(correction, format: .generic) else { Issue.record("refused"); return }
        let third = try await store.spend.importSpend(fixed, provenance: ImportProvenance(importedBy: "analyst", fileName: "fix.csv", format: "generic", bytes: correction))
        #expect(third.replaced == 2)
        #expect(try await total() == ["2026-11-20 10 22 125000000", "2026-11-21 10 25 130000000"])
        // Provenance: who, which file, its hash, what it did.
        let imports = try await store.spend.imports(limit: 10)
        #expect(imports.rows.count == 3)
        let who = try #require(imports.columns.firstIndex(of: "imported_by")), file = try #require(imports.columns.firstIndex(of: "file_name"))
        #expect(imports.rows.first?[who] == .string("analyst"))
        #expect(imports.rows.first?[file] == .string("fix.csv"))
        // Rows point at the import that wrote them.
        let ids = try await store.column("SELECT DISTINCT import_id FROM spend ORDER BY import_id", as: Int64.self)
        #expect(ids == [again.id, third.id])
    }

    /// Networks deliver claims and cost in separate exports (issue 49, finding 13: a spend-only import emptied the day's
    /// claimed installs). A file replaces only the measures it carries (spend, claims, impressions, clicks) for the days
    /// it covers; the others stay as earlier files gave them, whichever comes first. A file with every measure replaces
    /// the day whole, as before.
    @Test(arguments: TestEngine.allCases) func claimsAndCostFromSeparateFilesMerge(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        func load(_ text: String) async throws {
            let bytes = Array(text.utf8)
            guard case .success(let rows) = SpendFile.read(bytes, format: .generic) else { Issue.record("refused: \(text)"); return }
            _ = try await store.spend.importSpend(rows, provenance: ImportProvenance(importedBy: "analyst", fileName: "f.csv", format: "generic", bytes: bytes))
        }
        func seen() async throws -> [String] {
            try await store.column("""
                SELECT day || ' ' || campaign || ' ' || coalesce(CAST(claimed_installs AS TEXT), '-') || ' ' || coalesce(CAST(spend_micros AS TEXT), '-')
                    || ' ' || coalesce(currency, '-') || ' ' || coalesce(CAST(clicks AS TEXT), '-') FROM spend_daily ORDER BY day, campaign
                """, as: String.self)
        }
        // Cost first, for two campaigns and two days.
        try await load("date,app,ad_network,campaign,spend,currency\n2026-11-20,1108187390,example123.skadnetwork,10,100.00,USD\n"
                       + "2026-11-20,1108187390,example123.skadnetwork,11,50.00,USD\n2026-11-21,1108187390,example123.skadnetwork,10,70.00,USD\n")
        // Then the claims of the first day, for campaigns 10 and 12: the cost stays, campaign 12 has claims only.
        try await load("date,app,ad_network,campaign,installs,clicks\n2026-11-20,1108187390,example123.skadnetwork,10,20,300\n"
                       + "2026-11-20,1108187390,example123.skadnetwork,12,5,40\n")
        #expect(try await seen() == ["2026-11-20 10 20 100000000 USD 300", "2026-11-20 11 - 50000000 USD -", "2026-11-20 12 5 - - 40",
                                     "2026-11-21 10 - 70000000 USD -"])
        // A corrected cost file for that day replaces the cost and keeps the claims and clicks.
        try await load("date,app,ad_network,campaign,spend,currency\n2026-11-20,1108187390,example123.skadnetwork,10,90.00,EUR\n")
        #expect(try await seen() == ["2026-11-20 10 20 90000000 EUR 300", "2026-11-20 12 5 - - 40", "2026-11-21 10 - 70000000 USD -"])
        // Performance reads the merged day: spend and claims of campaign 10 together.
        let performance = try await store.performance.report(try PerformanceQuery.parse([("by", "campaign"), ("from", "2026-11-20"), ("to", "2026-11-21")]))
        let campaign = try #require(performance.columns.firstIndex(of: "campaign")), claimed = try #require(performance.columns.firstIndex(of: "claimed_installs"))
        let spend = try #require(performance.columns.firstIndex(of: "spend"))
        let ten = try #require(performance.rows.first { $0[campaign] == .string("10") })
        #expect(ten[claimed] == .number("20") && ten[spend] == .number("90.00"), "\(ten)")
        // A file with every measure replaces the day whole.
        try await load("date,app,ad_network,campaign,impressions,clicks,installs,re_engagements,spend,currency\n"
                       + "2026-11-20,1108187390,example123.skadnetwork,11,1000,10,3,0,30.00,USD\n")
        #expect(try await seen() == ["2026-11-20 11 3 30000000 USD 10", "2026-11-21 10 - 70000000 USD -"])
    }

    /// docs/sql.md's `exchange_rates_daily` converts as performance does (issue 49, deliverable 2): the rate of the
    /// amount's day, else the latest before; its example query gives performance's spend in dollars.
    @Test(arguments: TestEngine.allCases) func theRatesViewConvertsAsPerformanceDoes(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let spend = Array(("date,app,ad_network,campaign,spend,currency\n2026-11-18,1108187390,eur1.skadnetwork,10,10.00,EUR\n"
                           + "2026-11-20,1108187390,eur1.skadnetwork,10,100.00,EUR\n2026-11-21,1108187390,eur1.skadnetwork,10,50.00,EUR\n"
                           + "2026-11-23,1108187390,eur1.skadnetwork,10,20.00,EUR\n2026-11-21,1108187390,usd1.skadnetwork,10,33.33,USD\n").utf8)
        guard case .success(let rows) = SpendFile.read(spend, format: .generic) else { Issue.record("refused"); return }
        _ = try await store.spend.importSpend(rows, provenance: ImportProvenance(importedBy: "analyst", fileName: "s.csv", format: "generic", bytes: spend))
        // No rate before the 20th: the 18th's spend cannot be converted, so the period starts on the 19th.
        let rates = Array("date,from,to,rate\n2026-11-20,EUR,USD,1.08\n2026-11-23,EUR,USD,1.1\n".utf8)
        guard case .success(let parsed) = ExchangeRateFile.read(rates) else { Issue.record("refused"); return }
        _ = try await store.spend.importRates(parsed, provenance: ImportProvenance(importedBy: "analyst", fileName: "r.csv", format: "rates", bytes: rates))
        #expect(try await store.column("SELECT valid_from || ' ' || coalesce(valid_until, '-') || ' ' || rate FROM exchange_rates_daily ORDER BY valid_from", as: String.self)
                == ["2026-11-20 2026-11-23 1.08", "2026-11-23 - 1.1"])
        let document = try String(contentsOf: Checkout.root.appendingPathComponent("docs/sql.md"), encoding: .utf8)
        let query = try #require(document.components(separatedBy: "```sql\n").first { $0.hasPrefix("SELECT s.ad_network_id,") }?.components(separatedBy: "```").first)
        let filtered = query.replacingOccurrences(of: "WHERE s.spend_micros IS NOT NULL", with: "WHERE s.spend_micros IS NOT NULL AND s.day >= '2026-11-19'")
        var fromSQL: [String: Double] = [:]
        for row in try await store.rows(filtered, []) { fromSQL[try row.get(at: 0, as: String.self)] = try row.get(at: 1, as: Double.self) }
        let report = try await store.performance.report(try PerformanceQuery.parse([("by", "ad_network"), ("currency", "USD"), ("from", "2026-11-19"), ("to", "2026-11-24")]))
        let network = try #require(report.columns.firstIndex(of: "ad_network")), dollars = try #require(report.columns.firstIndex(of: "spend"))
        var reported: [String: Double] = [:]
        for row in report.rows { if case .number(let text) = row[dollars], let value = Double(text) { reported[try #require(row[network].string)] = value } }
        // 100 × 1.08 + 50 × 1.08 (the 20th's rate still in force) + 20 × 1.1 = 184, and the dollars as they are.
        #expect(fromSQL == ["eur1.skadnetwork": 184, "usd1.skadnetwork": 33.33] && reported == fromSQL, "\(fromSQL) against \(reported)")
    }

    @Test(arguments: TestEngine.allCases) func exchangeRatesAreCheckedAndStoredExactly(engine: TestEngine) async throws {
        let bad = Array("date,from,to,rate\n2026-11-20,EUR,USD,1.0842\n2026-11-20,EUR,USD,1.09\n2026-11-21,EUR,EUR,1\n2026-11-22,ZZZ,USD,1\n2026-11-23,EUR,USD,-1\n".utf8)
        guard case .failure(let problems) = ExchangeRateFile.read(bad) else { Issue.record("accepted"); return }
        #expect(problems.problems.map(\.line) == [3, 4, 5, 6])
        let store = try engine.freshStore()
        let good = Array("date,from,to,rate\n2026-11-20,EUR,USD,1.0842\n2026-11-20,JPY,USD,0.006419003\n".utf8)
        guard case .success(let rates) = ExchangeRateFile.read(good) else { Issue.record("refused"); return }
        _ = try await store.spend.importRates(rates, provenance: ImportProvenance(importedBy: "t", fileName: nil, format: "rates", bytes: good))
        let stored = try await store.spend.rates()
        #expect(stored.map { "\($0.from)\($0.to) \($0.rate)" } == ["EURUSD 1.0842", "JPYUSD 0.006419003"])
    }
    /// Finding 6 of trust round 4: on PostgreSQL, two imports of the same days at once kept both files' rows (spend counted
    /// twice), and two of the same file collided on the key. Raced here round after round, each ends with exactly one
    /// file's rows per day, app and network, and both imports succeed.
    @Test(arguments: TestEngine.allCases) func concurrentImportsOfTheSameDaysKeepOneFile(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        func file(campaigns: Int, spend: String) throws -> (rows: [SpendRow], provenance: ImportProvenance) {
            let lines = (1...28).flatMap { day in
                (1...campaigns).map { "2026-11-\(String(format: "%02d", day)),1108187390,example123.skadnetwork,\($0),US,100,5,2,0,\(spend),USD" }
            }
            let bytes = Self.rows(lines)
            guard case .success(let rows) = SpendFile.read(bytes, format: .generic) else { throw SpendRaceFailure.refused }
            return (rows, ImportProvenance(importedBy: "race", fileName: nil, format: "generic", bytes: bytes))
        }
        let wide = try file(campaigns: 50, spend: "1.00"), narrow = try file(campaigns: 40, spend: "2.00")
        for (first, second) in [(wide, narrow), (narrow, wide), (wide, wide), (narrow, narrow)] {
            async let a = store.spend.importSpend(first.rows, provenance: first.provenance)
            async let b = store.spend.importSpend(second.rows, provenance: second.provenance)
            let (one, two) = try await (a, b)
            let perScope = try await store.column("""
                SELECT count(DISTINCT import_id) FROM spend_daily GROUP BY day, app, ad_network_id ORDER BY 1 DESC
                """, as: Int64.self)
            #expect(perScope.count == 28)
            #expect(perScope.first == 1)
            // One file's rows, whole, and nothing else left behind: the import made current last wins.
            let kept = try await store.column("SELECT DISTINCT import_id FROM spend", as: Int64.self)
            #expect(kept.count == 1)
            let winner = kept.first == one.id ? one : two
            #expect(kept.first == winner.id)
            #expect(try await store.scalar("SELECT count(*) FROM spend_daily", as: Int64.self) == Int64(winner.rows))
            #expect(try await store.scalar("SELECT count(*) FROM spend", as: Int64.self) == Int64(winner.rows))
        }
        let ratesBytes = Array("date,from,to,rate\n2026-11-20,EUR,USD,1.0842\n2026-11-21,EUR,USD,1.0850\n".utf8)
        guard case .success(let rates) = ExchangeRateFile.read(ratesBytes) else { Issue.record("refused"); return }
        let provenance = ImportProvenance(importedBy: "race", fileName: nil, format: "rates", bytes: ratesBytes)
        for _ in 0..<4 {
            async let a = store.spend.importRates(rates, provenance: provenance)
            async let b = store.spend.importRates(rates, provenance: provenance)
            _ = try await (a, b)
            #expect(try await store.scalar("SELECT count(*) FROM exchange_rates", as: Int64.self) == 2)
        }
    }
}

extension SpendImportTests {
    /// Finding 4 of trust round 4: a million-line import held SQLite's writer for 8-10 s in one transaction. Ingest
    /// goes on committing while 10,000 rows stage (`scripts/bench-background` measures the rate it keeps), and
    /// meanwhile a reader sees the old file's total or the new one's, never a mix.
    @Test(arguments: TestEngine.allCases) func ingestGoesOnWhileALargeImportStages(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        func file(_ spend: String, campaigns: Int) throws -> [SpendRow] {
            let lines = (1...20).flatMap { day in
                (1...campaigns).map { "2026-10-\(String(format: "%02d", day)),1108187390,example123.skadnetwork,c\($0),US,1,1,1,0,\(spend),USD" }
            }
            guard case .success(let rows) = SpendFile.read(Self.rows(lines), format: .generic) else { throw SpendRaceFailure.refused }
            return rows
        }
        let provenance = ImportProvenance(importedBy: "t", fileName: nil, format: "generic", bytes: [])
        _ = try await store.spend.importSpend(try file("1.00", campaigns: 10), provenance: provenance)
        let oldTotal: Int64 = 20 * 10 * 1_000_000
        let large = try file("2.00", campaigns: 500)
        let newTotal: Int64 = 20 * 500 * 2_000_000
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        func intake(_ id: String) throws -> Intake {
            let body = try Mint.aak(AAKPostbackFields(postbackID: Mint.uuid(id)), key: key, keyID: "net/0")
            let result = verifier.verify(body)
            return Intake(receivedAt: Date(), remoteAddress: nil, route: .aak, body: body, result: result, decision: TrustPolicy().decide(result))
        }
        let writer = GroupCommitWriter(database: store, metrics: TestMetrics())
        let (duringStaging, totals) = try await withRunningWriter(writer) {
            // The staging pace's batch, with a longer pause, so the test sees a pause whatever the machine's speed.
            let importing = Task { try await store.spend.importSpend(large, provenance: provenance, pace: WritePace(batch: 2_000, idleRatio: 10)) }
            var sent = 0, duringStaging = 0
            var totals: Set<Int64> = []
            func live() async throws -> Int { try await store.scalar("SELECT count(*) FROM spend_imports WHERE state = 'live'", as: Int.self) ?? 0 }
            func staged() async throws -> Int {
                try await store.scalar("SELECT count(*) FROM spend s JOIN spend_imports i ON i.id = s.import_id WHERE i.state = 'staging'", as: Int.self) ?? 0
            }
            while try await live() == 1 {
                let before = try await staged()
                #expect(try await writer.submit(intake("during-\(sent)")) == .stored)
                let after = try await staged()
                // Staging had begun before the submission and had not ended when it was stored.
                if before > 0, after > 0, after < 10_000 { duringStaging += 1 }
                if sent % 25 == 0 { totals.insert(try await store.scalar("SELECT sum(spend_micros) FROM spend_daily", as: Int64.self) ?? 0) }
                sent += 1
            }
            #expect(try await importing.value.rows == 10_000)
            return (duringStaging, totals)
        }
        // 10,000 rows stage in 5 transactions of 2,000, each followed by a pause for the writer's other callers; an
        // import that held the writer would leave every postback submitted after staging began waiting until it ended.
        #expect(duringStaging >= 1, "no postback was stored while the import staged")
        #expect(totals.isSubset(of: [oldTotal, newTotal]))
        #expect(try await store.scalar("SELECT sum(spend_micros) FROM spend_daily", as: Int64.self) == newTotal)
        #expect(try await store.scalar("SELECT count(*) FROM spend", as: Int64.self) == 10_000)
    }

    /// An import whose process died while staging (nothing written for over an hour) is marked failed and its rows
    /// deleted by the next import, and one still staging keeps its rows until it too falls silent for an hour.
    @Test(arguments: TestEngine.allCases) func anAbandonedImportIsMarkedFailedAndSwept(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let line = "2026-10-01,1108187390,example123.skadnetwork,1,US,1,1,1,0,1.00,USD"
        guard case .success(let rows) = SpendFile.read(Self.rows([line]), format: .generic) else { Issue.record("refused"); return }
        let provenance = ImportProvenance(importedBy: "t", fileName: nil, format: "generic", bytes: [])
        // Two imports caught staging, as a crash leaves them: one silent for two hours, one that wrote a minute ago.
        let old = Timestamp.format(Date().addingTimeInterval(-7_200)), recent = Timestamp.format(Date().addingTimeInterval(-60))
        try await store.engine.write { db in
            for (id, at) in [(Int64(100), old), (Int64(101), recent)] {
                _ = try db.execute("""
                    INSERT INTO spend_imports (id, kind, state, imported_at, progress_at, imported_by, file_sha256, format, rows, replaced)
                    VALUES (?, 'spend', 'staging', ?, ?, 't', '', 'generic', 1, 0)
                    """, [id, at, at])
                _ = try db.execute("""
                    INSERT INTO spend (day, app, ad_network_id, campaign, country, spend_micros, currency, import_id)
                    VALUES ('2026-10-02', 1108187390, 'example123.skadnetwork', '1', 'US', 5, 'USD', ?)
                    """, [id])
            }
        }
        _ = try await store.spend.importSpend(rows, provenance: provenance)
        #expect(try await store.column("SELECT state FROM spend_imports WHERE id IN (100, 101) ORDER BY id", as: String.self) == ["failed", "staging"])
        #expect(try await store.column("SELECT DISTINCT import_id FROM spend WHERE import_id IN (100, 101) ORDER BY import_id", as: Int64.self) == [101])
        #expect(try await store.scalar("SELECT count(*) FROM spend_daily", as: Int64.self) == 1)
        // Silent for two hours now, the other goes the same way.
        try await store.engine.write { db in _ = try db.execute("UPDATE spend_imports SET progress_at = ? WHERE id = 101", [old]) }
        _ = try await store.spend.importSpend(rows, provenance: provenance)
        #expect(try await store.scalar("SELECT state FROM spend_imports WHERE id = 101", as: String.self) == "failed")
        #expect(try await store.scalar("SELECT count(*) FROM spend WHERE import_id IN (100, 101)", as: Int64.self) == 0)
    }

    /// An import that fails while staging is never seen, is marked failed, and leaves no rows behind.
    @Test(arguments: TestEngine.allCases) func aFailedImportIsNeverSeenAndLeavesNothing(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let bytes = Self.rows((1...9).map { "2026-10-0\($0),1108187390,example123.skadnetwork,1,US,1,1,1,0,1.00,USD" })
        guard case .success(let rows) = SpendFile.read(bytes, format: .generic) else { Issue.record("refused"); return }
        let provenance = ImportProvenance(importedBy: "t", fileName: nil, format: "generic", bytes: bytes)
        let first = try await store.spend.importSpend(rows, provenance: provenance)
        // The second import's staging fails, as a full disk would.
        try await store.engine.write { db in try RefusingTrigger.install(on: "spend", message: "disk full", db) }
        await #expect(throws: (any Error).self) {
            _ = try await store.spend.importSpend(rows, provenance: provenance, pace: WritePace(batch: 2, idleRatio: 0))
        }
        try await store.engine.write { db in try RefusingTrigger.remove(from: "spend", db) }
        #expect(try await store.column("SELECT state FROM spend_imports ORDER BY id", as: String.self) == ["live", "failed"])
        #expect(try await store.column("SELECT DISTINCT import_id FROM spend", as: Int64.self) == [first.id])
        #expect(try await store.scalar("SELECT count(*) FROM spend_daily", as: Int64.self) == 9)
    }
}

enum SpendRaceFailure: Error { case refused }
