import Foundation
import Spend
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// Cohort curves (issue 49, deliverable 5): revenue per install and ROAS by days 2, 7 and 35 per install week and
/// network, each point over the weeks whose window has closed; recomputed here from the raw rows and the spend file,
/// with the week, the zone and the closing rule as docs/metrics.md states them, on both engines.
@Suite struct CohortCurveTests {
    static let networks = ["net-a.adattributionkit", "net-b.adattributionkit"]

    @Test(arguments: TestEngine.allCases) func curvesAgreeWithTheRawRowsOverClosedWeeksOnly(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        guard case .stored = try await store.schemas.put(app: MaturityTests.app, document: MaturityTests.schema) else { Issue.record("schema refused"); return }
        let now = MaturityTests.start.addingTimeInterval(70 * 86_400 + 5 * 3600)
        let intakes = try MaturityTests().intakes(1500, seed: 0x2545_F491_4F6C_DD1D, days: 80) { index, fields in
            fields.adNetworkID = Self.networks[index % 2]
            if index % 3 != 0, index % 7 == 0 { fields.coarseConversionValue = nil }
        }
        _ = try store.ledger.persist(intakes.filter { $0.receivedAt < now })
        var spend = "date,app,ad_network,spend,currency\n"
        for day in 0..<120 {
            let date = Timestamp.format(MaturityTests.start.addingTimeInterval(Double(day - 40) * 86_400)).prefix(10)
            for (index, network) in Self.networks.enumerated() { spend += "\(date),\(MaturityTests.app),\(network),\(100 + index * 37 + day).25,USD\n" }
        }
        guard case .success(let rows) = SpendFile.read(Array(spend.utf8), format: .generic) else { Issue.record("spend refused"); return }
        _ = try await store.spend.importSpend(rows, provenance: ImportProvenance(importedBy: "test", fileName: nil, format: "generic", bytes: Array(spend.utf8)))

        // Independently: weeks in Berlin, Monday first; a week's window k is closed once its end plus 84, 252 or 924
        // hours has passed; installs, revenue (middle) and spend summed per network and week from the raw rows.
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = TimeZone(identifier: "Europe/Berlin")!
        func week(_ moment: Date) -> Date { calendar.dateInterval(of: .weekOfYear, for: moment)!.start }
        struct Week { var installs = 0; var revenue = [Decimal](repeating: 0, count: 3); var spend = Decimal(0) }
        var weeks: [String: [Date: Week]] = [:]
        for row in try await store.rows("""
            SELECT ad_network_id, estimated_install_at, conversion_window, did_win, revenue_min_micros, revenue_max_micros FROM conversions
            WHERE countable = 1 AND conversion_class = 'install'
            """, []) {
            let network = try row.get("ad_network_id", as: String.self)
            let start = week(try #require(Timestamp.parse(try row.get("estimated_install_at", as: String.self))))
            let window = try row.get("conversion_window", as: Int.self)
            if window == 0, try row.get("did_win", as: Int.self) == 1 { weeks[network, default: [:]][start, default: Week()].installs += 1 }
            let low = try row.get("revenue_min_micros", as: Int64?.self) ?? 0, high = try row.get("revenue_max_micros", as: Int64?.self) ?? 0
            weeks[network, default: [:]][start, default: Week()].revenue[window] += Decimal(low + high) / 2
        }
        for row in rows {
            var utc = Calendar(identifier: .gregorian)
            utc.timeZone = TimeZone(identifier: "Europe/Berlin")!
            let parts = row.day.split(separator: "-").map { Int($0)! }
            let day = utc.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2]))!
            weeks[row.adNetwork, default: [:]][week(day), default: Week()].spend += row.spendMicros.map { Decimal($0) } ?? 0
        }
        func closed(_ start: Date, _ window: Int) -> Bool {
            now >= calendar.date(byAdding: .day, value: 7, to: start)!.addingTimeInterval(Double([84, 252, 924][window] * 3600))
        }

        var query = try PerformanceQuery.parse([("by", "ad_network"), ("tz", "Europe/Berlin")])
        query.asOf = now
        let table = try await store.cohorts.report(query, maximumGroups: nil)
        #expect(table.rows.count == 2)
        var checked = 0
        for row in table.rows {
            let cells = Dictionary(uniqueKeysWithValues: zip(table.columns, row))
            let network = try #require(cells["ad_network"]?.string)
            let own = try #require(weeks[network])
            #expect(cells["installs"] == .number(String(own.values.reduce(0) { $0 + $1.installs })))
            for (window, point) in ["d2", "d7", "d35"].enumerated() {
                let behind = own.filter { closed($0.key, window) }.map(\.value)
                let installs = behind.reduce(0) { $0 + $1.installs }
                let revenue = behind.reduce(Decimal(0)) { total, week in total + week.revenue[...window].reduce(0, +) } / 1_000_000
                let spent = behind.reduce(Decimal(0)) { $0 + $1.spend } / 1_000_000
                #expect(cells["cohort_installs_\(point)"] == .number(String(installs)), "\(network) \(point)")
                #expect(installs > 0 && installs < own.values.reduce(0) { $0 + $1.installs }, "\(network) \(point): some weeks closed and some not")
                let perInstall = try #require(Decimal(string: number(cells["revenue_per_install_\(point)"])))
                let roas = try #require(Decimal(string: number(cells["roas_\(point)"])))
                #expect(abs(perInstall - revenue / Decimal(installs)) < Decimal(string: "0.000001")!, "\(network) \(point)")
                #expect(abs(roas - revenue / spent) < Decimal(string: "0.0001")!, "\(network) \(point)")
                checked += 1
            }
        }
        #expect(checked == 6)

        // By week, a week's points are empty until its window closes.
        var weekly = try PerformanceQuery.parse([("by", "week,ad_network"), ("tz", "Europe/Berlin")])
        weekly.asOf = now
        let byWeek = try await store.cohorts.report(weekly, maximumGroups: nil)
        var states: Set<String> = []
        for row in byWeek.rows {
            let cells = Dictionary(uniqueKeysWithValues: zip(byWeek.columns, row))
            let network = try #require(cells["ad_network"]?.string), label = try #require(cells["week"]?.string)
            let start = try #require(own(weeks[network] ?? [:], label: label, calendar: calendar))
            for (window, point) in ["d2", "d7", "d35"].enumerated() {
                let isClosed = closed(start, window)
                states.insert("\(point) \(isClosed)")
                #expect((cells["roas_\(point)"] != .null) == isClosed, "\(network) \(label) \(point)")
            }
        }
        #expect(states.count == 6, "\(states)")
    }

    /// A number cell's text, else "".
    func number(_ cell: JSONValue?) -> String {
        if case .number(let literal) = cell { return literal }
        return ""
    }

    /// The week start whose ISO label (`2026-W40`) is `label`.
    func own(_ weeks: [Date: Any], label: String, calendar: Calendar) -> Date? {
        weeks.keys.first { start in
            String(format: "%04d-W%02d", calendar.component(.yearForWeekOfYear, from: start), calendar.component(.weekOfYear, from: start)) == label
        }
    }
}
