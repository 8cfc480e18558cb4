import Foundation
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// Maturity (issue 49, finding 4 and deliverable 3): a window the performance report calls closed for a row's days is
/// final, proven by storing the postbacks that arrived before a moment, reading the report as of then, storing the rest
/// and reading it again; one it calls not due holds nothing yet. On both engines, in a zone that is not UTC.
@Suite struct MaturityTests {
    static let key = try! ECPrivateKey.generate()
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
    ]))
    static let app: AppID = 10738027756
    static let start = Timestamp.parse("2026-09-01T00:00:00Z")!
    static let schema = Array(#"""
        {"format": "countersign.conversion-schema/1", "app": "10738027756", "currency": "USD", "versions": [{"version": 1, "effective-from": "2020-01-01T00:00:00Z",
         "install": {"windows": {"0": {"fine": {"values": [{"range": [0, 63], "events": [{"name": "purchase", "revenue": {"min": 1, "max": 3}}]}]},
                                       "coarse": {"low": {"events": []}, "medium": {"events": [{"name": "purchase", "revenue": {"min": 2, "max": 4}}]}, "high": {"events": []}}}}}}]}
        """#.utf8)

    /// `count` postbacks of the app arriving over `days` days from ``start`` in an order fixed by `seed`, a third in each
    /// window (a fine value in window 0, a medium coarse one after); `change` sets more of each one's fields.
    func intakes(_ count: Int = 1200, seed: UInt64 = 0x9E37_79B9_7F4A_7C15, days: Int = 60,
                 _ change: (Int, inout AAKPostbackFields) -> Void = { _, _ in }) throws -> [Intake] {
        var state = seed
        return try (0..<count).map { index in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let arrival = Self.start.addingTimeInterval(Double((state >> 11) % UInt64(days * 86_400)))
            var fields = AAKPostbackFields(postbackID: Mint.uuid("maturity-\(seed)-\(index)"))
            fields.advertisedItemID = Self.app.number
            fields.postbackSequenceIndex = index % 3
            if index % 3 == 0 { fields.conversionValue = index % 64 } else { fields.coarseConversionValue = "medium" }
            change(index, &fields)
            let body = try Mint.aak(fields, key: Self.key, keyID: "net/0")
            let result = verifier.verify(body)
            return Intake(receivedAt: arrival, remoteAddress: nil, route: .aak, body: body, result: result, decision: TrustPolicy().decide(result))
        }
    }

    /// The report's cells by their first cell (the day or the network) and column.
    func cells(_ table: ReportTable) -> [String: [String: JSONValue]] {
        var rows: [String: [String: JSONValue]] = [:]
        for row in table.rows {
            let key: String = switch row[0] { case .string(let text): text; case .number(let literal): literal; default: "" }
            rows[key] = Dictionary(uniqueKeysWithValues: zip(table.columns, row))
        }
        return rows
    }

    @Test(arguments: TestEngine.allCases) func aClosedWindowIsFinalAndOneNotDueHoldsNothing(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        guard case .stored = try await store.schemas.put(app: Self.app, document: Self.schema) else { Issue.record("schema refused"); return }
        let moment = Self.start.addingTimeInterval(45 * 86_400 + 20 * 3600)
        let all = try intakes()
        let before = all.filter { $0.receivedAt < moment }, after = all.filter { $0.receivedAt >= moment }
        #expect(!before.isEmpty && !after.isEmpty)
        _ = try store.ledger.persist(before)
        var query = try PerformanceQuery.parse([("by", "day"), ("tz", "Europe/Berlin")])
        query.asOf = moment
        let then = cells(try await store.performance.report(query))
        _ = try store.ledger.persist(after)
        query.asOf = moment.addingTimeInterval(400 * 86_400)
        let final = cells(try await store.performance.report(query))
        #expect(final.values.allSatisfy { row in (0...2).allSatisfy { row["window_\($0)_maturity"] == .string("closed") } })
        let figures = ["installs", "revenue_mid_window_0", "revenue_mid_window_1", "revenue_mid_window_2"]
        var seen: [String: Int] = [:]
        for (day, row) in then {
            for window in 0...2 {
                guard case .string(let maturity) = row["window_\(window)_maturity"] else { Issue.record("no maturity on \(day)"); continue }
                seen["\(window) \(maturity)", default: 0] += 1
                let own = window == 0 ? [figures[0], figures[1]] : [figures[window + 1]]
                switch maturity {
                case "closed":
                    for figure in own { #expect(row[figure] == final[day]?[figure], "\(day) window \(window) \(figure) changed after it closed") }
                case "not_due":
                    for figure in own { #expect([JSONValue.number("0"), .number("0.00"), .null].contains(row[figure]), "\(day) window \(window) \(figure) before it was due") }
                default: #expect(maturity == "in_flight")
                }
            }
        }
        // Every state was met in every window, so the checks above were not vacuous.
        for window in 0...2 { for state in ["closed", "in_flight"] { #expect(seen["\(window) \(state)", default: 0] > 0, "\(window) \(state): \(seen)") } }
        #expect(seen["1 not_due", default: 0] + seen["2 not_due", default: 0] > 0, "\(seen)")

        // A report over a period is judged by its days: here window 0 has closed on all of them, window 1 is arriving
        // and window 2 not yet due.
        var period = try PerformanceQuery.parse([("by", "ad_network"), ("from", "2026-10-01"), ("to", "2026-10-11"), ("tz", "Europe/Berlin")])
        period.asOf = moment
        let row = try #require(cells(try await store.performance.report(period)).values.first)
        #expect([row["window_0_maturity"], row["window_1_maturity"], row["window_2_maturity"]] == [.string("closed"), .string("in_flight"), .string("not_due")])
        // On the arrival basis a day is closed once it ends.
        var arrival = try PerformanceQuery.parse([("by", "day"), ("basis", "arrival"), ("from", "2026-10-14"), ("to", "2026-10-17")])
        arrival.asOf = Timestamp.parse("2026-10-15T12:00:00Z")
        let days = cells(try await store.performance.report(arrival))
        #expect(days["2026-10-14"]?["window_2_maturity"] == .string("closed") && days["2026-10-15"]?["window_0_maturity"] == .string("in_flight"))
    }

    /// The edges of each state: window 0 can first receive SKAdNetwork 3.0 postbacks 36 hours into a day (their estimate
    /// subtracts 36 hours), and closes 84 hours after the day ends.
    @Test func eachWindowOpensAtItsEarliestLagAndClosesAtItsLatest() throws {
        let start = try #require(Timestamp.parse("2026-11-02T00:00:00Z")), end = start.addingTimeInterval(86_400)
        func state(_ window: Int, after hours: Double) -> WindowMaturity {
            WindowMaturity.of(window: window, firstDayStart: start, lastDayEnd: end, now: start.addingTimeInterval(hours * 3600), installBasis: true)
        }
        #expect([state(0, after: 35.9), state(0, after: 36), state(0, after: 24 + 83.9), state(0, after: 24 + 84)] == [.notDue, .inFlight, .inFlight, .closed])
        #expect([state(1, after: 251.9), state(1, after: 252), state(1, after: 24 + 252)] == [.notDue, .inFlight, .closed])
        #expect([state(2, after: 923.9), state(2, after: 924), state(2, after: 24 + 924)] == [.notDue, .inFlight, .closed])
        #expect(WindowMaturity.of(window: 2, firstDayStart: start, lastDayEnd: end, now: end, installBasis: false) == .closed)
        #expect(WindowMaturity.of(window: 0, firstDayStart: start, lastDayEnd: end, now: start, installBasis: false) == .inFlight)
    }

    /// docs/sql.md's closing moments of `cohorts_daily`'s rows are the ends of their days in the app's zone plus the
    /// lags the report judges by, across both of Berlin's clock changes.
    @Test(arguments: TestEngine.allCases) func theDocumentedClosingMomentsAreTheReports(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        try await store.apps.set(AppRegistry.Entry(app: Self.app, name: "Game", timeZone: "Europe/Berlin"))
        var intakes: [Intake] = []
        for base in ["2026-03-30T00:00:00Z", "2026-10-26T00:00:00Z"] {
            for step in 0..<24 {
                var fields = AAKPostbackFields(postbackID: Mint.uuid("zone-\(base)-\(step)"))
                fields.advertisedItemID = Self.app.number
                let body = try Mint.aak(fields, key: Self.key, keyID: "net/0")
                let result = verifier.verify(body)
                intakes.append(Intake(receivedAt: try #require(Timestamp.parse(base)).addingTimeInterval(Double(step) * 5 * 3600), remoteAddress: nil,
                                      route: .aak, body: body, result: result, decision: TrustPolicy().decide(result)))
            }
        }
        _ = try store.ledger.persist(intakes)
        let document = try String(contentsOf: Checkout.root.appendingPathComponent("docs/sql.md"), encoding: .utf8)
        let blocks = document.components(separatedBy: "```sql\n").filter { $0.hasPrefix("SELECT install_day, time_zone, ad_network_id") }
            .compactMap { $0.components(separatedBy: "```").first }
        let query = try #require(blocks.first { $0.contains(engine == .postgres ? "AT TIME ZONE" : "strftime") })
        var berlin = Calendar(identifier: .gregorian)
        berlin.timeZone = TimeZone(identifier: "Europe/Berlin")!
        let text = ISO8601DateFormatter()
        let rows = try await store.rows(query, [])
        #expect(rows.count >= 8)
        for row in rows {
            let day = try row.get("install_day", as: String.self)
            #expect(try row.get("time_zone", as: String.self) == "Europe/Berlin")
            let parts = day.split(separator: "-").compactMap { Int($0) }
            let start = try #require(berlin.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2])))
            let end = try #require(berlin.date(byAdding: .day, value: 1, to: start))
            for window in 0...2 {
                let expected = text.string(from: end.addingTimeInterval(Double(WindowMaturity.lagHours[window]) * 3600))
                #expect(try row.get("window_\(window)_closes_at", as: String.self) == expected, "\(day) window \(window)")
            }
        }
    }
}
