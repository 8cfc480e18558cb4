import CountersignServer
import Foundation
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// Reports choose their day basis (issue 49, deliverable 2): `basis=install` puts `from`, `to`, `day` and `week` on the
/// estimated install day, as performance does; `basis=arrival` (the default) on the day postbacks arrived. Each table
/// names its basis.
@Suite struct DayBasisTests {
    @Test(arguments: TestEngine.allCases) func reportsCountDaysOnTheBasisAsked(engine: TestEngine) async throws {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        let store = try engine.freshStore()
        let app: AppID = 10738027756
        // Postbacks of all three windows arriving every 5 hours over three weeks: their install days lie 3.5, 10.5 and
        // 38.5 days before they arrive, so the two bases give other days and other totals.
        let start = try #require(Timestamp.parse("2026-10-20T03:00:00Z"))
        for index in 0..<100 {
            var fields = AAKPostbackFields(postbackID: Mint.uuid("B-\(index)"))
            fields.advertisedItemID = app.number
            fields.postbackSequenceIndex = index % 3
            let body = try Mint.aak(fields, key: key, keyID: "net/0")
            let result = verifier.verify(body)
            #expect(try store.ledger.persist([Intake(receivedAt: start.addingTimeInterval(Double(index) * 5 * 3600), remoteAddress: nil, route: .any, body: body,
                                                     result: result, decision: TrustPolicy(allowDevelopment: false).decide(result))]) == [.stored])
        }
        var berlin = Calendar(identifier: .gregorian)
        berlin.timeZone = TimeZone(identifier: "Europe/Berlin")!
        func day(_ text: String) throws -> String {
            let parts = berlin.dateComponents([.year, .month, .day], from: try #require(Timestamp.parse(text)))
            return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
        }
        let rows = try await store.rows("SELECT received_at, estimated_install_at FROM conversions WHERE countable = 1")
        let raw = try rows.map { (received: try day(try $0.get(at: 0, as: String.self)), installed: try day(try $0.get(at: 1, as: String.self))) }
        let (from, to) = ("2026-10-25", "2026-11-05")
        for basis in DayBasis.allCases {
            // The oracle: postbacks whose day on this basis, in Berlin, is within the period, counted by that day.
            var expected: [String: Int] = [:]
            for postback in raw {
                let counted = basis == .install ? postback.installed : postback.received
                if counted >= from, counted < to { expected[counted, default: 0] += 1 }
            }
            let table = try await store.reports.report(try ReportQuery.parse([("by", "day"), ("tz", "Europe/Berlin"), ("from", from), ("to", to), ("basis", basis.rawValue)]))
            #expect(table.dayBasis == basis)
            let dayColumn = try #require(table.columns.firstIndex(of: "day")), postbacks = try #require(table.columns.firstIndex(of: "postbacks"))
            var reported: [String: Int] = [:]
            for row in table.rows { reported[try #require(row[dayColumn].string), default: 0] += Int(try #require(row[postbacks].int64)) }
            #expect(reported == expected, "\(basis)")
            #expect(expected.values.reduce(0, +) > 20, "\(basis): the period holds postbacks")
        }
        #expect(try await store.reports.report(try ReportQuery.parse([("by", "day")])).dayBasis == .arrival, "arrival unless asked")
    }
}
