import CountersignServer
import Foundation
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// What the simulator sent, read back independently of Countersign's own parser.
struct SentPostback {
    let dedupKey: String
    let kind: SimulatedPostback.Kind
    let family: String
    let campaign: String
    let window: Int
    let conversionClass: String
    let didWin: Bool
    let interaction: String?
    let country: String?
    let hasValue: Bool

    init(_ simulated: SimulatedPostback) throws {
        let outer = try #require(try JSONSerialization.jsonObject(with: Data(simulated.body)) as? [String: Any])
        var signed = outer
        if let jws = outer["jws-string"] as? String {
            var payload = String(jws.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while payload.count % 4 != 0 { payload += "=" }
            let payloadData = try #require(Data(base64Encoded: payload))
            signed = try #require(try JSONSerialization.jsonObject(with: payloadData) as? [String: Any])
        }
        dedupKey = simulated.dedupKey
        kind = simulated.kind
        family = outer["jws-string"] != nil ? "aak" : "skan"
        let source = (signed["source-identifier"] as? String) ?? (signed["campaign-id"] as? Int).map(String.init) ?? ""
        campaign = String(source.prefix(2))
        window = signed["postback-sequence-index"] as? Int ?? 0
        let type = signed["conversion-type"] as? String ?? ((signed["redownload"] as? Bool) == true ? "redownload" : "download")
        conversionClass = type == "re-engagement" ? "re-engagement" : "install"
        didWin = signed["did-win"] as? Bool ?? true
        if let unsignedInteraction = outer["ad-interaction-type"] as? String {
            interaction = unsignedInteraction
        } else if let fidelity = signed["fidelity-type"] as? Int {
            interaction = fidelity == 1 ? "click" : "view"
        } else {
            interaction = nil
        }
        country = outer["country-code"] as? String
        hasValue = outer["conversion-value"] != nil || outer["coarse-conversion-value"] != nil
    }
}

/// A database filled by `Simulation` through the real verify-and-store path, and what was sent.
struct ReportFixture {
    let store: StoreDatabase
    let sent: [SentPostback]

    /// First copies only: what reports count.
    var counted: [SentPostback] {
        var seen = Set<String>()
        return sent.filter { seen.insert($0.dedupKey).inserted }
    }

    static func make(count: Int = 800, engine: TestEngine) async throws -> ReportFixture {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "sim/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test")]))
        var simulation = Simulation(seed: 99, key: key, keyID: "sim/0")
        let store = try engine.freshStore()
        var sent: [SentPostback] = []
        var intakes: [Intake] = []
        for _ in 0..<count {
            let simulated = try simulation.next()
            sent.append(try SentPostback(simulated))
            let result = verifier.verify(simulated.body)
            intakes.append(Intake(receivedAt: Date(), remoteAddress: nil, route: IntakeRoute(simulated.family), body: simulated.body, result: result, decision: TrustPolicy().decide(result)))
        }
        _ = try store.ledger.persist(intakes)
        return ReportFixture(store: store, sent: sent)
    }

    func report(_ parameters: [(String, String)]) async throws -> [[String: JSONValue]] {
        let table = try await store.reports.report(try ReportQuery.parse(parameters))
        return table.rows.map { Dictionary(uniqueKeysWithValues: zip(table.columns, $0)) }
    }
}

@Suite struct ReportTests {
    @Test(arguments: TestEngine.allCases) func everyMetricAndFilterMatchesWhatWasSent(engine: TestEngine) async throws {
        let fixture = try await ReportFixture.make(engine: engine)
        let counted = fixture.counted
        let sent = fixture.sent
        #expect(counted.count > 600)

        // Totals.
        let total = try #require(try await fixture.report([]).first)
        #expect(total["postbacks"] == .number(String(counted.count)))
        #expect(total["counted"] == .number(String(counted.count)))
        // docs/metrics.md: one install per winning first-window install postback; the other install postbacks apart.
        #expect(total["installs"] == .number(String(counted.filter { $0.conversionClass == "install" && $0.didWin && $0.window == 0 }.count)))
        #expect(total["re_engagements"] == .number(String(counted.filter { $0.conversionClass == "re-engagement" && $0.didWin && $0.window == 0 }.count)))
        #expect(total["install_postbacks"] == .number(String(counted.filter { $0.conversionClass == "install" }.count)))
        #expect(total["re_engagement_postbacks"] == .number(String(counted.filter { $0.conversionClass == "re-engagement" }.count)))
        let withCountry = Double(counted.filter { $0.country != nil }.count) / Double(counted.count)
        #expect(abs(Double(total["share_with_country"]!.serialized)! - withCountry) < 0.0001)
        #expect(total["winning"] == .number(String(counted.filter(\.didWin).count)))
        #expect(total["non_winning"] == .number(String(counted.filter { !$0.didWin }.count)))
        #expect(total["duplicates"] == .number(String(sent.filter { $0.kind == .duplicate }.count)))
        #expect(total["replays"] == .number(String(sent.filter { $0.kind == .replay }.count)))
        let withoutValue = Double(counted.filter { !$0.hasValue }.count) / Double(counted.count)
        #expect(abs(Double(total["share_without_value"]!.serialized)! - withoutValue) < 0.0001)
        #expect(abs(Double(total["share_with_unsigned_value"]!.serialized)! - (1 - withoutValue)) < 0.0001)

        // Grouped by campaign and window.
        var expected: [String: Int] = [:]
        for postback in counted { expected["\(postback.campaign)|\(postback.window)", default: 0] += 1 }
        let grouped = try await fixture.report([("by", "campaign,window")])
        var actual: [String: Int] = [:]
        for row in grouped { actual["\(row["campaign"]!.string!)|\(row["window"]!.int64!)"] = Int(row["postbacks"]!.int64!) }
        #expect(actual == expected)

        // Each filter against an independent count.
        let filters: [([(String, String)], (SentPostback) -> Bool)] = [
            ([("window", "1")], { $0.window == 1 }),
            ([("type", "re-engagement")], { $0.conversionClass == "re-engagement" }),
            ([("type", "install")], { $0.conversionClass == "install" }),
            ([("protocol", "skan")], { $0.family == "skan" }),
            ([("did_win", "false")], { !$0.didWin }),
            ([("interaction", "view")], { $0.interaction == "view" }),
            ([("country", "us")], { $0.country == "US" }),
            ([("source_prefix", "11")], { $0.campaign == "11" }),
            ([("protocol", "aak"), ("window", "0"), ("did_win", "true")], { $0.family == "aak" && $0.window == 0 && $0.didWin }),
        ]
        for (parameters, predicate) in filters {
            let row = try await fixture.report(parameters).first
            #expect(row?["postbacks"] == .number(String(counted.filter(predicate).count)), "\(parameters)")
        }
    }

    @Test(arguments: TestEngine.allCases) func groupingByDayWeekAndTierAddsUp(engine: TestEngine) async throws {
        let fixture = try await ReportFixture.make(count: 200, engine: engine)
        for dimension in ["day", "week", "tier", "protocol", "conversion_type", "interaction", "fidelity", "did_win", "creative", "publisher"] {
            let rows = try await fixture.report([("by", dimension)])
            let sum = rows.compactMap { $0["postbacks"]?.int64 }.reduce(0, +)
            #expect(Int(sum) == fixture.counted.count, "\(dimension)")
        }
    }

    /// `fidelity` is SKAdNetwork's signed fidelity-type, as sent (issue 13): 1 for clicks, 0 for views.
    @Test(arguments: TestEngine.allCases) func fidelityIsTheSignedSKANField(engine: TestEngine) async throws {
        let fixture = try await ReportFixture.make(count: 200, engine: engine)
        let rows = try await fixture.report([("by", "fidelity"), ("protocol", "skan")])
        let skan = fixture.counted.filter { $0.family == "skan" }
        for (fidelity, interaction) in [(1, "click"), (0, "view")] {
            let row = rows.first { $0["fidelity"] == .number(String(fidelity)) }
            #expect(Int(row?["postbacks"]?.int64 ?? 0) == skan.filter { $0.interaction == interaction }.count, "fidelity \(fidelity)")
        }
    }

    /// Publishers are the app ids or web domains that showed the ads, as sent (issue 13).
    @Test(arguments: TestEngine.allCases) func publishersAreAppsOrDomains(engine: TestEngine) async throws {
        let fixture = try await ReportFixture.make(count: 200, engine: engine)
        let rows = try await fixture.report([("by", "publisher")])
        let publishers = Set(rows.compactMap { $0["publisher"]?.string })
        #expect(publishers.contains("1234567891") || publishers.contains("5838492"))
        #expect(publishers.contains("example.com"))
    }

    /// Development postbacks are never counted: asking for them reports them (the filter implies include_uncounted),
    /// whatever include_uncounted says, rather than an empty answer or a refusal.
    @Test func developmentImpliesUncounted() throws {
        #expect(try ReportQuery.parse([("environment", "development")]).includeUncounted)
        #expect(try ReportQuery.parse([("environment", "development"), ("include_uncounted", "false")]).includeUncounted)
        #expect(try ReportQuery.parse([("environment", "production")]).includeUncounted == false)
    }

    @Test(arguments: TestEngine.allCases) func badParametersAreRefusedAndValuesAreBound(engine: TestEngine) async throws {
        let fixture = try await ReportFixture.make(count: 50, engine: engine)
        let refused: [[(String, String)]] = [
            [("by", "campaign; DROP TABLE postbacks")], [("by", "c.id")], [("window", "3")], [("window", "0 OR 1=1")],
            [("from", "yesterday")], [("app", "1 OR 1=1")], [("tier", "4")], [("sort", "x")], [("source_prefix", "1' --")],
            [("ad_network", "Example.SKAdNetwork")], [("ad_network", "a b")],
        ]
        for parameters in refused {
            #expect(throws: QueryProblem.self, "\(parameters)") { try ReportQuery.parse(parameters) }
        }
        // An injection attempt in every parameter is refused.
        let attack = "x' OR '1'='1'; DROP TABLE postbacks; --"
        for name in ["from", "to", "app", "ad_network", "source_prefix", "type", "window", "did_win", "interaction", "country",
                     "environment", "tier", "protocol", "include_uncounted", "by"] {
            #expect(throws: QueryProblem.self, "\(name) accepted an injection attempt") { try ReportQuery.parse([(name, attack)]) }
        }
        // A range that ends before it starts is empty, not an error; an empty ad network means any.
        #expect(try await fixture.report([("from", "2026-11-02"), ("to", "2026-11-01"), ("include_uncounted", "true")]).isEmpty)
        #expect(try ReportQuery.parse([("ad_network", "")]).adNetwork == nil)
        let stillThere = try await fixture.store.scalar("SELECT count(*) FROM postbacks", as: Int.self)
        #expect(stillThere == fixture.counted.count)
    }

    @Test(arguments: TestEngine.allCases) func conversionsArePagedByIdCursor(engine: TestEngine) async throws {
        let fixture = try await ReportFixture.make(count: 120, engine: engine)
        var after: Int64 = 0
        var seen: [Int64] = []
        while true {
            let page = try await fixture.store.reports.conversions(try ReportQuery.parse([]), after: after, limit: 50)
            seen += page.rows.compactMap { $0.first?.int64 }
            guard page.rows.count == 50, let last = page.rows.last?.first?.int64 else { break }
            after = last
        }
        #expect(seen.count == fixture.counted.count)
        #expect(seen == seen.sorted())
        #expect(Set(seen).count == seen.count)
    }
}

/// The rollup (folded rows plus the rows not yet folded) answers exactly what scanning the rows answers.
@Suite struct RollupTests {
    static let queries: [[(String, String)]] = [
        [], [("by", "campaign,window")], [("by", "day,conversion_class")], [("by", "week,protocol,environment")],
        [("by", "ad_group,creative"), ("protocol", "aak")], [("by", "source_identifier")], [("by", "tier,interaction,country")],
        [("by", "did_win,conversion_type"), ("window", "0")], [("include_uncounted", "true"), ("by", "environment")],
        [("source_prefix", "11"), ("by", "window")], [("type", "re-engagement"), ("by", "campaign")], [("country", "US")],
        [("from", "2026-01-01"), ("to", "2099-01-01"), ("by", "app,ad_network")],
    ]

    static func expectAgreement(_ store: StoreDatabase, _ moment: String) async throws {
        for parameters in queries {
            let query = try ReportQuery.parse(parameters)
            #expect(query.rollupAnswers, "\(parameters)")
            let fromRollup = try await store.reports.report(query)
            let fromRows = try await store.reports.report(query, forceRows: true)
            #expect(fromRollup.columns == fromRows.columns)
            #expect(fromRollup.rows == fromRows.rows, "\(moment): \(parameters)")
        }
    }

    static func tailRows(_ store: StoreDatabase) async throws -> Int {
        try await store.scalar("SELECT (SELECT count(*) FROM conversion_rollup_live) - (SELECT count(*) FROM conversion_rollup)", as: Int.self) ?? -1
    }

    @Test(arguments: TestEngine.allCases) func rollupMatchesRowScanBeforeAndAfterFoldsUpdatesAndDeletions(engine: TestEngine) async throws {
        let fixture = try await ReportFixture.make(count: 400, engine: engine)
        let store = fixture.store
        #expect(try await Self.tailRows(store) > 0, "nothing is folded until a fold runs")
        try await Self.expectAgreement(store, "unfolded")
        let half = try store.rollup.fold(limit: 150)
        #expect(half == 150)
        try await Self.expectAgreement(store, "half folded")
        // Updates through every path the triggers see, on folded and unfolded rows: a schema decode, a promotion and a deletion.
        _ = try await store.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop"))
        _ = try await store.ledger.decodeBacklog(app: 10738027756)
        try await store.engine.write { db in
            try db.execute("UPDATE postbacks SET countable = 0, environment = 'development' WHERE id % 7 = 0")
            try db.execute("DELETE FROM postback_events WHERE postback_id % 11 = 0")
            try db.execute("DELETE FROM postbacks WHERE id % 11 = 0")
        }
        try await Self.expectAgreement(store, "after updates")
        try store.rollup.fold()
        #expect(try await Self.tailRows(store) == 0, "a full fold leaves no tail")
        try await Self.expectAgreement(store, "fully folded")
        // A new row can arrive with an id below rows already folded: SQLite gives a new row the largest id plus one, so after
        // the largest (folded) row is deleted that id comes back; PostgreSQL receivers commit ids out of order. Either way
        // the new row must count as not folded.
        let (deleted, inserted) = try await store.engine.write { db -> (Int64, Int64?) in
            let last = try db.value("SELECT max(id) FROM postbacks", as: Int64.self)!
            let donor = try db.value("SELECT max(id) FROM postbacks WHERE id < ? AND countable = 1", [last], as: Int64.self)!
            try db.execute("DELETE FROM postbacks WHERE id = ?", [last])
            let catalog = db.dialect == .sqlite
                ? "SELECT name FROM pragma_table_info('postbacks')"
                : "SELECT column_name FROM information_schema.columns WHERE table_name = 'postbacks'"
            let columns = try db.rows(catalog, []).map { try $0.get(at: 0, as: String.self) }
                .filter { !["id", "dedup_key"].contains($0) }.joined(separator: ", ")
            let id = try db.value("INSERT INTO postbacks (id, dedup_key, \(columns)) SELECT ?, dedup_key || '-copy', \(columns) FROM postbacks WHERE id = ? RETURNING id",
                                  [last, donor], as: Int64.self)
            // PostgreSQL's ingest lists each new row for the rollup in the statement that inserts it.
            if db.dialect == .postgres { try db.execute("INSERT INTO rollup_pending (id) VALUES (?)", [last]) }
            return (last, id)
        }
        #expect(inserted == deleted, "the new row took the deleted row's id")
        #expect(try await Self.tailRows(store) == 1, "and counts as not folded")
        try await Self.expectAgreement(store, "after an id was reused")
        try store.rollup.fold()
        try await Self.expectAgreement(store, "folded again")
        let revenue = try await store.reports.report(try ReportQuery.parse([]))
        let revenueMin = try #require(revenue.columns.firstIndex(of: "revenue_min"))
        #expect(revenue.rows.contains { $0[revenueMin] != .number("0.00") }, "the decode put revenue into the rollup")
    }

    @Test func queriesTheRollupCannotAnswerScanRows() throws {
        #expect(!(try ReportQuery.parse([("by", "event")])).rollupAnswers)
        #expect(!(try ReportQuery.parse([("by", "campaign_name")])).rollupAnswers)
        #expect(!(try ReportQuery.parse([("from", "2026-11-01T10:30:00Z")])).rollupAnswers)
        #expect((try ReportQuery.parse([("from", "2026-11-01"), ("to", "2026-11-02")])).rollupAnswers)
    }
}

/// `week` is the ISO 8601 week (issue 13): across the 2026/2027 boundary, from the rows and from the rollup, equal to
/// Foundation's ISO 8601 calendar.
@Suite struct ISOWeekTests {
    @Test(arguments: TestEngine.allCases) func weeksFollowISO8601AcrossTheYearBoundary(engine: TestEngine) async throws {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        let store = try engine.freshStore()
        let days = ["2025-12-29", "2026-01-01", "2026-11-23", "2026-12-28", "2026-12-31", "2027-01-03", "2027-01-04"]
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var expected: [String: Int] = [:]
        var intakes: [Intake] = []
        for (index, day) in days.enumerated() {
            let date = try #require(Timestamp.parse(day + "T12:00:00Z"))
            let week = calendar.dateComponents([.yearForWeekOfYear, .weekOfYear], from: date)
            expected[String(format: "%04d-W%02d", week.yearForWeekOfYear!, week.weekOfYear!), default: 0] += 1
            let body = try Mint.aak(AAKPostbackFields(postbackID: Mint.uuid("week-\(index)")), key: key, keyID: "net/0")
            let result = verifier.verify(body)
            intakes.append(Intake(receivedAt: date, remoteAddress: nil, route: .aak, body: body, result: result, decision: TrustPolicy().decide(result)))
        }
        #expect(expected == ["2026-W01": 2, "2026-W48": 1, "2026-W53": 3, "2027-W01": 1])
        _ = try store.ledger.persist(intakes)
        for forceRows in [true, false] {
            if !forceRows { try store.rollup.fold() }
            let table = try await store.reports.report(try ReportQuery.parse([("by", "week")]), forceRows: forceRows)
            let postbacks = try #require(table.columns.firstIndex(of: "postbacks"))
            let weeks = Dictionary(uniqueKeysWithValues: table.rows.map { ($0[0].string ?? "", Int($0[postbacks].int64 ?? 0)) })
            #expect(weeks == expected, "forceRows: \(forceRows)")
        }
    }
}
