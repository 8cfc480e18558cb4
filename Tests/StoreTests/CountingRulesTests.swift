import CountersignServer
import Foundation
import JWS
import Postback
import PostbackMint
@testable import Store
import Testing
import TestSupport

/// What counts follows the rules in force (issue 25, item 2): postbacks stored while the app registry left them out
/// count once the registry takes them in, stop counting when it leaves them out again, and the rollup and reports
/// follow, on both engines.
@Suite struct CountingRulesTests {
    static let key = try! ECPrivateKey.generate()
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
    ]))
    static let apps: [AppID] = [1_108_187_390, 525_463_029]
    static let networks = ["a.example", "b.example"]

    /// Two postbacks for each app and ad network, stored under `policy`.
    func store(on engine: TestEngine, under policy: TrustPolicy) throws -> StoreDatabase {
        let store = try engine.freshStore()
        var intakes: [Intake] = []
        for app in Self.apps {
            for network in Self.networks {
                for copy in 0..<2 {
                    var fields = AAKPostbackFields(postbackID: Mint.uuid("\(app)-\(network)-\(copy)"))
                    fields.advertisedItemID = app.number
                    fields.adNetworkID = network
                    let body = try Mint.aak(fields, key: Self.key, keyID: "net/0")
                    let result = verifier.verify(body)
                    intakes.append(Intake(receivedAt: Date(), remoteAddress: nil, route: .aak, body: body, result: result, decision: policy.decide(result)))
                }
            }
        }
        #expect(try store.ledger.persist(intakes).allSatisfy { $0 == .stored })
        try store.rollup.fold()
        return store
    }

    /// The (app, network) pairs counted, from the raw rows.
    func counted(_ store: StoreDatabase) async throws -> Set<String> {
        Set(try await store.column("SELECT advertised_item_id || '/' || ad_network_id FROM postbacks WHERE countable = 1", as: String.self))
    }

    /// Counted postbacks as the report (from the rollup) gives them.
    func reported(_ store: StoreDatabase) async throws -> Int64 {
        let table = try await store.reports.report(try ReportQuery.parse([]))
        return table.rows.first.flatMap { row in row[table.columns.firstIndex(of: "postbacks")!].numberText.flatMap { Int64($0) } } ?? 0
    }

    @Test(arguments: TestEngine.allCases) func storedPostbacksCountAsTheRulesInForceSay(engine: TestEngine) async throws {
        let (first, second) = (Self.apps[0], Self.apps[1])
        let onlyFirstOnA = TrustPolicy(apps: [first: .init(acceptedAdNetworks: ["a.example"])])
        let store = try store(on: engine, under: onlyFirstOnA)
        #expect(try await counted(store) == ["\(first)/a.example"])
        #expect(try await reported(store) == 2)

        // Each change, then the pairs that count under it, written out by hand.
        let changes: [(TrustPolicy, Set<String>)] = [
            (TrustPolicy(apps: [first: .init(), second: .init(acceptedAdNetworks: ["b.example"])]),
             ["\(first)/a.example", "\(first)/b.example", "\(second)/b.example"]),
            (TrustPolicy(), Set(Self.apps.flatMap { app in Self.networks.map { "\(app)/\($0)" } })),
            (TrustPolicy(acceptedAdNetworks: ["b.example"]), Set(Self.apps.map { "\($0)/b.example" })),
            (onlyFirstOnA, ["\(first)/a.example"]),
        ]
        for (policy, expected) in changes {
            let before = try await counted(store)
            let changed = try await store.counting.apply(policy)
            #expect(try await counted(store) == expected)
            // Rows whose count changed, and perhaps others whose reason for not counting changed.
            #expect(changed >= 2 * before.symmetricDifference(expected).count)
            #expect(try await reported(store) == Int64(2 * expected.count))
            #expect(try await store.counting.apply(policy) == 0, "applying the same rules twice changes nothing")
        }
        // Why each one is left out is kept with it.
        let reasons = try await store.column("SELECT DISTINCT coalesce(reason, '') FROM postbacks ORDER BY 1", as: String.self)
        #expect(reasons == ["", "ad_network_not_accepted", "app_not_registered"])
    }
}

extension JSONValue {
    /// The text of a JSON number.
    var numberText: String? {
        if case .number(let text) = self { return text }
        return nil
    }
}

/// Campaign names for every SKAdNetwork version (issue 26): before 4.0 the campaign is the signed campaign-id, and the
/// schema's names apply to its digits as they do to a 4.0 source identifier, so one campaign is one row by name.
@Suite struct CampaignNameTests {
    @Test(arguments: TestEngine.allCases) func skanBefore4GetsTheSchemasCampaignNames(engine: TestEngine) async throws {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test")]))
        let store = try engine.freshStore()
        let game = try ExampleSchema.document("game")
        let app = try #require(try JSONParser.parse(game).object?["app"].flatMap { $0.string.flatMap { AppID($0) } ?? $0.int64.map { AppID($0) } })
        guard case .stored = try await store.schemas.put(app: app, document: game) else { Issue.record("schema refused"); return }
        var intakes: [Intake] = []
        for (index, version) in [SKANVersion.v3_0, .v2_2, .v4_0].enumerated() {
            var fields = SKANPostbackFields(transactionID: Mint.uuid("N-\(index)"))
            fields.version = version
            fields.appID = app.number
            fields.campaignID = 10
            fields.sourceIdentifier = "10"
            let body = try Mint.skan(fields, key: key)
            let result = verifier.verify(body)
            intakes.append(Intake(receivedAt: Date(), remoteAddress: nil, route: .skan, body: body, result: result, decision: TrustPolicy().decide(result)))
        }
        #expect(try store.ledger.persist(intakes) == [.stored, .stored, .stored])
        let table = try await store.reports.report(try ReportQuery.parse([("by", "protocol,campaign_name")]))
        let names = table.rows.map { $0[table.columns.firstIndex(of: "campaign_name")!] }
        #expect(names == [.string("Launch")], "\(table.rows)")
        #expect(table.rows.first?[table.columns.firstIndex(of: "postbacks")!] == .number("3"))
    }
}

/// The SQL views answer what analysts asked (issue 26, item 1): the app's name and its own days, installs as
/// docs/metrics.md defines them, exact revenue to add, the estimated install time; the same on both engines.
@Suite struct AppDayViewTests {
    @Test(arguments: TestEngine.allCases) func viewsGiveTheAppsDaysNameInstallsAndEstimates(engine: TestEngine) async throws {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test")]))
        let store = try engine.freshStore()
        let app: AppID = 1_108_187_390
        try await store.apps.set(AppRegistry.Entry(app: app, name: "Berlin Game", timeZone: "Europe/Berlin"))
        // 23:30 UTC on 2026-11-20 is 00:30 on the 21st in Berlin (UTC+1 in November).
        let late = try #require(Timestamp.parse("2026-11-20T23:30:00Z"))
        var intakes: [Intake] = []
        func add(_ id: String, window: Int, didWin: Bool = true, version: SKANVersion = .v4_0, at time: Date = late) throws {
            var fields = SKANPostbackFields(transactionID: Mint.uuid(id))
            fields.version = version
            fields.appID = app.number
            fields.postbackSequenceIndex = window
            fields.didWin = didWin
            if version != .v4_0 { fields.postbackSequenceIndex = 0 }
            let body = try Mint.skan(fields, key: key)
            let result = verifier.verify(body)
            intakes.append(Intake(receivedAt: time, remoteAddress: nil, route: .skan, body: body, result: result, decision: TrustPolicy().decide(result)))
        }
        try add("V-0", window: 0)
        try add("V-1", window: 1)
        try add("V-2", window: 2)
        try add("V-3", window: 0, didWin: false)
        try add("V-4", window: 0, version: .v3_0)
        _ = try store.ledger.persist(intakes)
        try store.rollup.fold()
        let rows = try await store.rows("SELECT postback_identifier, day, local_day, time_zone, app_name, estimated_install_at FROM conversions")
        var byID: [String: SQLRow] = [:]
        for row in rows { byID[try row.get("postback_identifier", as: String.self)] = row }
        for row in rows {
            #expect(try row.get("day", as: String.self) == "2026-11-20")
            #expect(try row.get("local_day", as: String.self) == "2026-11-21")
            #expect(try row.get("time_zone", as: String.self) == "Europe/Berlin")
            #expect(try row.get("app_name", as: String.self) == "Berlin Game")
        }
        // Arrival less 84 h (window 0), 252 h (1), 924 h (2), 36 h (before SKAdNetwork 4.0): docs/metrics.md.
        let expected = [("V-0", 84), ("V-1", 252), ("V-2", 924), ("V-3", 84), ("V-4", 36)]
        for (id, hours) in expected {
            let estimated = try #require(byID[Mint.uuid(id)]).get("estimated_install_at", as: String.self)
            #expect(estimated == Timestamp.format(late.addingTimeInterval(-Double(hours) * 3600)), "\(id)")
        }
        // conversions_daily counts the app's day and installs as defined: winning window-0 install postbacks.
        let daily = try #require(try await store.rows("SELECT day, time_zone, sum(installs) AS installs, sum(counted) AS counted FROM conversions_daily GROUP BY day, time_zone").first)
        #expect(try daily.get("day", as: String.self) == "2026-11-21")
        #expect(try daily.get("installs", as: Int.self) == 2)
        #expect(try daily.get("counted", as: Int.self) == 5)
        // The report with the app's zone agrees, and so does its installs column.
        let report = try await store.reports.report(try ReportQuery.parse([("by", "day,install_day"), ("tz", "Europe/Berlin")]))
        let day = try #require(report.columns.firstIndex(of: "day")), install = try #require(report.columns.firstIndex(of: "install_day"))
        #expect(Set(report.rows.compactMap { $0[day].string }) == ["2026-11-21"])
        #expect(Set(report.rows.compactMap { $0[install].string }) == ["2026-11-17", "2026-11-10", "2026-10-13", "2026-11-19"])
    }
}
