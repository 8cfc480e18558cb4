import CountersignServer
import Foundation
import GRDB
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// Revenue is exact and never added across currencies (issue 13, item 1).
@Suite struct MoneyTests {
    @Test func millionthsAreWrittenAsExactDecimals() {
        #expect(Money.decimal(micros: 7_622_450_000) == "7622.45")
        #expect(Money.decimal(micros: 5_000_000) == "5.00")
        #expect(Money.decimal(micros: 0) == "0.00")
        #expect(Money.decimal(micros: -1) == "-0.000001")
        #expect(Money.decimal(micros: 123_456_789) == "123.456789")
        #expect(Money.decimal(halfOfMicros: 3) == "0.0000015")
        #expect(Money.decimal(halfOfMicros: 10_000_000) == "5.00")
        #expect(Money.decimal(halfOfMicros: -9_980_000) == "-4.99")
    }

    /// What is sent: per app, a conversion value, how often, and the revenue range the example schema gives it.
    struct Sent {
        let app: AppID, schema: String, currency: String, fine: Int, count: Int, min: Decimal, max: Decimal
    }

    static let sent = [
        Sent(app: 1108187390, schema: "game", currency: "USD", fine: 2, count: 37, min: Decimal(string: "0.99")!, max: Decimal(string: "1.99")!),
        Sent(app: 1108187390, schema: "game", currency: "USD", fine: 6, count: 11, min: Decimal(string: "14.99")!, max: Decimal(string: "19.99")!),
        Sent(app: 525463029, schema: "subscription", currency: "EUR", fine: 10, count: 23, min: Decimal(string: "4.99")!, max: Decimal(string: "4.99")!),
        Sent(app: 10738027756, schema: "shop", currency: "USD", fine: 3, count: 7, min: 10, max: 20),
    ]

    /// The expected sums of `sent` grouped by `key`, computed with Foundation's decimal arithmetic.
    static func expected(by key: (Sent) -> String) -> [String: (min: Decimal, max: Decimal)] {
        var sums: [String: (min: Decimal, max: Decimal)] = [:]
        for item in sent {
            var sum = sums[key(item), default: (0, 0)]
            sum.min += item.min * Decimal(item.count)
            sum.max += item.max * Decimal(item.count)
            sums[key(item)] = sum
        }
        return sums
    }

    /// A report cell as a decimal; floating-point noise (`271.52000000000004`) makes it differ from the expectation.
    static func decimal(_ value: JSONValue?) -> Decimal? {
        guard case .number(let text)? = value else { return nil }
        return Decimal(string: text)
    }

    static func fill(_ store: StoreDatabase) async throws {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        for schema in Set(sent.map(\.schema)) {
            let app = sent.first { $0.schema == schema }!.app
            guard case .stored = try await store.schemas.put(app: app, document: try ExampleSchema.document(schema)) else {
                Issue.record("schema \(schema) not stored"); return
            }
        }
        var intakes: [Intake] = []
        for item in sent {
            for index in 0..<item.count {
                var fields = AAKPostbackFields(postbackID: Mint.uuid("\(item.app)-\(item.fine)-\(index)"))
                fields.advertisedItemID = item.app.number
                fields.conversionValue = item.fine
                fields.sourceIdentifier = "1023"
                let body = try Mint.aak(fields, key: key, keyID: "net/0")
                let result = verifier.verify(body)
                intakes.append(Intake(receivedAt: Date(), remoteAddress: nil, route: .aak, body: body, result: result, decision: TrustPolicy().decide(result)))
            }
        }
        // Half folded into the rollup, half not yet: reports add the two parts.
        intakes.shuffle()
        _ = try store.ledger.persist(Array(intakes.prefix(intakes.count / 2)))
        try store.rollup.fold()
        _ = try store.ledger.persist(Array(intakes.dropFirst(intakes.count / 2)))
    }

    @Test(arguments: TestEngine.allCases) func threeAppsInTwoCurrenciesAreNeverAddedTogether(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await Self.fill(store)
        let byCurrency = Self.expected { $0.currency }
        let byApp = Self.expected { $0.app.description }
        let currencyOfApp = Dictionary(Self.sent.map { ($0.app, $0.currency) }) { first, _ in first }

        // Every report path: the rollup and the rows, with and without dimensions, and by event (events carry revenue).
        for (parameters, forceRows) in [([], false), ([], true), ([("by", "app")], false), ([("by", "app")], true),
                                         ([("by", "day,app")], false), ([("by", "event,app")], false), ([("by", "campaign_name,app")], false)] as [([(String, String)], Bool)] {
            let table = try await store.reports.report(try ReportQuery.parse(parameters), forceRows: forceRows)
            let rows = table.rows.map { Dictionary(uniqueKeysWithValues: zip(table.columns, $0)) }
            let label = "\(parameters) rows=\(forceRows)"
            #expect(table.columns.contains("currency"), "\(label)")
            var totals: [String: (min: Decimal, max: Decimal)] = [:]
            for row in rows {
                guard case .string(let currency)? = row["currency"] else { Issue.record("\(label): a row without its currency: \(row)"); continue }
                if case .number(let app)? = row["app"] { #expect(AppID(app).flatMap { currencyOfApp[$0] } == currency, "\(label): app \(app) in \(currency)") }
                if row["event"] == .string("install") || row["event"] == .string("add_to_cart") { continue }
                let min = try #require(Self.decimal(row["revenue_min"]), "\(label)"), max = try #require(Self.decimal(row["revenue_max"]), "\(label)")
                #expect(Self.decimal(row["revenue_mid"]) == (min + max) / 2, "\(label)")
                totals[currency, default: (0, 0)].min += min
                totals[currency, default: (0, 0)].max += max
                if case .number(let app)? = row["app"], parameters.first?.1 == "app" {
                    #expect(min == byApp[app]?.min && max == byApp[app]?.max, "\(label): app \(app) \(min) \(max)")
                }
            }
            #expect(Set(totals.keys) == Set(byCurrency.keys), "\(label)")
            for (currency, sum) in byCurrency {
                #expect(totals[currency]?.min == sum.min && totals[currency]?.max == sum.max, "\(label): \(currency) \(String(describing: totals[currency])) expected \(sum)")
            }
        }

        // A currency filter keeps one.
        let euros = try await store.reports.report(try ReportQuery.parse([("currency", "eur")]))
        #expect(euros.rows.count == 1)
        #expect(Self.decimal(euros.rows.first?[euros.columns.firstIndex(of: "revenue_min")!]) == byCurrency["EUR"]?.min)
        #expect(throws: QueryProblem.self) { try ReportQuery.parse([("currency", "euro")]) }

        // The analyst views: conversions_daily has a row per app and currency with exact sums; the live rollup keeps
        // currencies apart in whole millionths.
        for row in try await store.rows("SELECT app, currency, revenue_min, revenue_max FROM conversions_daily") {
            let app = AppID(try row.get("app", as: Int64.self))
            #expect(try row.get("currency", as: String.self) == currencyOfApp[app])
            #expect(Decimal(string: String(try row.get("revenue_min", as: Double.self))) == byApp[app.description]?.min, "conversions_daily \(app)")
            #expect(Decimal(string: String(try row.get("revenue_max", as: Double.self))) == byApp[app.description]?.max, "conversions_daily \(app)")
        }
        for row in try await store.rows("SELECT currency, sum(revenue_min_micros) AS micros FROM conversion_rollup_live GROUP BY currency") {
            let currency = try row.get("currency", as: String.self)
            #expect(Decimal(try row.get("micros", as: Int64.self)) / 1_000_000 == byCurrency[currency]?.min, "conversion_rollup_live \(currency)")
        }
    }

    /// An installation from before exact revenue (migration v10) keeps its numbers: v11 rebuilds the rollup from the
    /// rows already folded, keyed by currency, in whole millionths.
    @Test func anOlderSQLiteDatabaseIsRebuiltByCurrencyWithExactSums() async throws {
        let current = try TestEngine.sqlite.freshStore()
        try await Self.fill(current)
        try current.rollup.fold()
        let currentPath = try #require(current.engine as? SQLiteEngine).pool.path
        // The same rows in a database migrated only as far as v10, half of them folded into its old rollup.
        let path = temporaryDirectory() + "/v10.sqlite"
        let old = try DatabasePool(path: path)
        try SQLiteMigrations.migrator.migrate(old, upTo: "v10-client-reported-iad")
        try await old.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS current", arguments: [currentPath])
            let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('postbacks')").joined(separator: ", ")
            try db.execute(sql: "INSERT INTO postbacks (\(columns)) SELECT \(columns) FROM current.postbacks")
            try db.execute(sql: "DETACH DATABASE current")
            try db.execute(sql: "UPDATE rollup_state SET folded_through = (SELECT max(id) / 2 FROM postbacks)")
        }
        try old.close()
        let upgraded = try TestStore.open(StoreSettings(location: try DatabaseLocation(path)))
        let byCurrency = Self.expected { $0.currency }
        for forceRows in [false, true] {
            let table = try await upgraded.reports.report(try ReportQuery.parse([]), forceRows: forceRows)
            let rows = table.rows.map { Dictionary(uniqueKeysWithValues: zip(table.columns, $0)) }
            #expect(rows.count == byCurrency.count)
            for row in rows {
                let currency = try #require(row["currency"]?.string)
                #expect(Self.decimal(row["revenue_min"]) == byCurrency[currency]?.min, "\(currency) rows=\(forceRows)")
                #expect(Self.decimal(row["revenue_max"]) == byCurrency[currency]?.max, "\(currency) rows=\(forceRows)")
            }
        }
        #expect(try await upgraded.scalar("SELECT count(*) FROM conversion_rollup", as: Int.self) ?? 0 > 0, "the folded half was rebuilt")
    }
}
