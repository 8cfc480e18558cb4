import CountersignServer
import Foundation
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// The same simulated traffic stored through each engine answers every report, conversion page and analyst view
/// identically (issue 12).
@Suite struct EngineEqualityTests {
    static let reportQueries: [[(String, String)]] = [
        [], [("by", "campaign,window")], [("by", "day,conversion_class")], [("by", "week,protocol,environment"), ("include_uncounted", "true")],
        [("by", "ad_group,creative"), ("protocol", "aak")], [("by", "source_identifier")], [("by", "tier,interaction,country")],
        [("by", "did_win,conversion_type"), ("window", "0")], [("by", "event")], [("by", "campaign_name,ad_group_name")],
        [("by", "publisher,app,ad_network")], [("source_prefix", "11"), ("by", "window")], [("type", "re-engagement"), ("by", "campaign")],
        [("from", "2026-11-02T06:30"), ("to", "2026-11-04"), ("by", "day")], [("country", "us"), ("by", "event,campaign")],
        [("by", "app,schema_revision,decoding")], [("by", "window,value_kind,value")],
    ]

    /// What became of every body, as the dashboard's overview and health pages ask.
    static let intakeQueries: [[(String, String)]] = [
        [], [("by", "day,status")], [("by", "status,reason"), ("tz", "Europe/Berlin")], [("status", "unverifiable"), ("by", "protocol,version,reason")],
        [("by", "week,route,status"), ("protocol", "skan"), ("window", "0")], [("from", "2026-11-02"), ("to", "2026-11-03T12:00"), ("by", "app,ad_network")],
    ]

    static let views = [
        "SELECT * FROM conversions ORDER BY id",
        "SELECT * FROM conversion_events ORDER BY event_id",
        """
        SELECT * FROM conversions_daily ORDER BY day NULLS FIRST, app NULLS FIRST, ad_network_id NULLS FIRST, protocol NULLS FIRST,
            environment NULLS FIRST, campaign NULLS FIRST, conversion_class NULLS FIRST, conversion_window NULLS FIRST
        """,
    ]

    /// Simulated traffic over four days, with duplicates, replays, forgeries under unknown keys and every protocol version.
    static func traffic(count: Int) throws -> [Intake] {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "sim/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test")]))
        var simulation = Simulation(seed: 12, key: key, keyID: "sim/0")
        // One in 25 signed by a key nobody pinned: AAK ones are kept unverifiable, SKAN ones rejected as forged.
        var stranger = Simulation(seed: 13, key: try ECPrivateKey.generate(), keyID: "unknown/1", repeats: false)
        let start = try #require(Timestamp.parse("2026-11-01T00:00:00Z"))
        return try (0..<count).map { index in
            let simulated = index % 25 == 7 ? try stranger.next() : try simulation.next()
            let result = verifier.verify(simulated.body)
            return Intake(receivedAt: start.addingTimeInterval(Double(index) * 4 * 86_400 / Double(count)), remoteAddress: nil,
                          route: IntakeRoute(simulated.family), body: simulated.body, result: result, decision: TrustPolicy().decide(result))
        }
    }

    /// Every answer the store gives, as text, for comparison. Row ids are left out: PostgreSQL's sequences leave gaps
    /// (an insert that meets an existing dedup key still takes a number), so the same rows can have other ids; their
    /// order is the same.
    static func answers(_ store: StoreDatabase) async throws -> [String] {
        let ids: Set<String> = ["id", "event_id", "postback_id"]
        var answers: [String] = []
        for parameters in reportQueries {
            for forceRows in [false, true] {
                let table = try await store.reports.report(try ReportQuery.parse(parameters), forceRows: forceRows)
                answers.append("\(parameters) rows=\(forceRows): \(table.columns) \(table.rows.map { $0.map(\.serialized) })")
            }
        }
        for parameters in intakeQueries {
            let table = try await store.reports.intake(try IntakeQuery.parse(parameters))
            answers.append("intake \(parameters): \(table.columns) \(table.rows.map { $0.map(\.serialized) })")
        }
        let page = try await store.reports.conversions(try ReportQuery.parse([("include_uncounted", "true")]), after: 0, limit: 1000)
        answers.append("conversions: \(page.rows.map { $0.dropFirst().map(\.serialized) })")
        var csv: [UInt8] = []
        try await store.reports.exportConversions(try ReportQuery.parse([]), into: TableWriter(format: .csv, columns: ReportReader.conversionColumns)) { csv += $0 }
        answers.append("conversions.csv: \(String(decoding: csv, as: UTF8.self).split(separator: "\r\n").map { $0.drop { $0 != "," } })")
        for view in views {
            let rows = try await store.rows(view)
            let kept = (rows.first?.columns ?? []).indices.filter { !ids.contains(rows[0].columns[$0]) }
            answers.append("\(view): \(kept.map { rows[0].columns[$0] }) \(rows.map { row in kept.map { ReportTable.cell(row.values[$0]).serialized } })")
        }
        return answers
    }

    @Test func bothEnginesGiveIdenticalAnswers() async throws {
        let intakes = try Self.traffic(count: 600)
        var results: [TestEngine: [String]] = [:]
        for engine in TestEngine.allCases {
            let store = try engine.freshStore()
            _ = try await store.schemas.put(app: 10738027756, document: try ExampleSchema.document("shop"))
            for start in stride(from: 0, to: intakes.count, by: 50) {
                _ = try store.ledger.persist(Array(intakes[start..<min(start + 50, intakes.count)]))
                if start == 300 { try store.rollup.fold() }
                // A schema uploaded in the middle of the traffic: its backlog decoded in the background, the rest at ingest.
                if start == 200 {
                    _ = try await store.schemas.put(app: 1108187390, document: try ExampleSchema.document("game"))
                    _ = try await store.ledger.decodeBacklog(app: 1108187390)
                }
            }
            results[engine] = try await Self.answers(store)
        }
        let sqlite = try #require(results[.sqlite])
        let postgres = try #require(results[.postgres])
        #expect(sqlite.count == Self.reportQueries.count * 2 + Self.intakeQueries.count + 2 + Self.views.count)
        for (left, right) in zip(sqlite, postgres) where left != right {
            // Show where they part, not two pages of numbers.
            let common = zip(left, right).prefix { $0 == $1 }.count
            Issue.record("\(left.prefix(120))… differs at \(common): sqlite …\(left.dropFirst(max(0, common - 80)).prefix(200)) postgres …\(right.dropFirst(max(0, common - 80)).prefix(200))")
        }
        #expect(sqlite.contains { $0.contains("order") && $0.contains("add_to_cart") }, "the schema decoded events")
        #expect(sqlite.contains { $0.contains("level_20_reached") }, "the schema uploaded midway decoded events")
        let outcomes = try #require(sqlite.first { $0.hasPrefix("intake [(\"by\", \"status,reason\")") })
        for status in ["counted", "duplicate", "replay", "unverifiable", "rejected"] { #expect(outcomes.contains("[\"\\\"\(status)\\\"\""), "\(status) in \(outcomes)") }
    }
}
