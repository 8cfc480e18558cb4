import CountersignServer
import Foundation
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// Days and weeks in the analyst's time zone (issue 13, item 3): around midnight and across clock changes in two
/// zones, and ISO weeks across 2026/2027, equal to Foundation's calendar.
@Suite struct TimeZoneTests {
    /// Instants around midnight UTC and local, and around each zone's clock changes in 2026 (Berlin: 29 March and
    /// 25 October at 01:00 UTC; New York: 8 March 07:00 UTC and 1 November 06:00 UTC) and the 2026/2027 boundary.
    static let instants = [
        "2026-03-07T23:30:00Z", "2026-03-08T04:59:00Z", "2026-03-08T05:01:00Z", "2026-03-08T06:59:00Z", "2026-03-08T07:01:00Z",
        "2026-03-28T22:59:00Z", "2026-03-28T23:01:00Z", "2026-03-29T00:59:00Z", "2026-03-29T01:01:00Z", "2026-03-29T22:30:00Z",
        "2026-10-24T21:59:00Z", "2026-10-24T22:01:00Z", "2026-10-25T00:59:00Z", "2026-10-25T01:01:00Z", "2026-10-25T23:30:00Z",
        "2026-10-31T23:59:00Z", "2026-11-01T03:59:00Z", "2026-11-01T04:01:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z",
        "2026-12-31T22:30:00Z", "2026-12-31T23:30:00Z", "2027-01-01T04:30:00Z", "2027-01-03T23:30:00Z", "2027-01-04T04:30:00Z",
    ].map { Timestamp.parse($0)! }

    static func fill(_ store: StoreDatabase) throws {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        let intakes = try instants.enumerated().map { index, date in
            let body = try Mint.aak(AAKPostbackFields(postbackID: Mint.uuid("tz-\(index)")), key: key, keyID: "net/0")
            let result = verifier.verify(body)
            return Intake(receivedAt: date, remoteAddress: nil, route: .aak, body: body, result: result, decision: TrustPolicy().decide(result))
        }
        _ = try store.ledger.persist(intakes)
        try store.rollup.fold()
    }

    /// Counts per bucket as Foundation computes them.
    static func expected(_ zone: String, week: Bool, from: Date? = nil, to: Date? = nil) -> [String: Int] {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = TimeZone(identifier: zone)!
        var counts: [String: Int] = [:]
        for date in instants where from.map({ date >= $0 }) ?? true && to.map({ date < $0 }) ?? true {
            let bucket: String
            if week {
                let parts = calendar.dateComponents([.yearForWeekOfYear, .weekOfYear], from: date)
                bucket = String(format: "%04d-W%02d", parts.yearForWeekOfYear!, parts.weekOfYear!)
            } else {
                let parts = calendar.dateComponents([.year, .month, .day], from: date)
                bucket = String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
            }
            counts[bucket, default: 0] += 1
        }
        return counts
    }

    static func counts(_ store: StoreDatabase, _ parameters: [(String, String)], dimension: String) async throws -> [String: Int] {
        let table = try await store.reports.report(try ReportQuery.parse(parameters))
        let bucket = try #require(table.columns.firstIndex(of: dimension)), postbacks = try #require(table.columns.firstIndex(of: "postbacks"))
        return Dictionary(uniqueKeysWithValues: table.rows.map { ($0[bucket].string ?? "", Int($0[postbacks].int64 ?? 0)) })
    }

    @Test(arguments: TestEngine.allCases) func daysAndWeeksFollowTheZoneAcrossMidnightAndClockChanges(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try Self.fill(store)
        for zone in ["UTC", "Europe/Berlin", "America/New_York"] {
            for dimension in ["day", "week"] {
                let counts = try await Self.counts(store, [("by", dimension), ("tz", zone)], dimension: dimension)
                #expect(counts == Self.expected(zone, week: dimension == "week"), "\(zone) \(dimension)")
                let table = try await store.reports.report(try ReportQuery.parse([("by", dimension), ("tz", zone)]))
                #expect(table.timeZone == zone)
            }
            // A date without a time is local midnight; a date and time without an offset is local too.
            let zoned = TimeZone(identifier: zone)!
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zoned
            let from = calendar.date(from: DateComponents(year: 2026, month: 10, day: 25))!
            let to = calendar.date(from: DateComponents(year: 2026, month: 11, day: 1, hour: 1, minute: 30))!
            let filtered = try await Self.counts(store, [("by", "day"), ("tz", zone), ("from", "2026-10-25"), ("to", "2026-11-01T01:30")], dimension: "day")
            #expect(filtered == Self.expected(zone, week: false, from: from, to: to), "\(zone) from/to")
        }
    }

    @Test func onlyIANANamesAreTimeZonesAndTheRollupAnswersOnlyUTCDays() throws {
        for name in ["Europe/Berlin", "America/New_York", "UTC", "Asia/Kolkata"] {
            #expect((try ReportQuery.parse([("tz", name)])).timeZone.identifier == name)
        }
        for name in ["CET+1", "+02:00", "Mars/Olympus", "", "europe/berlin"] {
            #expect(throws: QueryProblem.self, "\(name)") { try ReportQuery.parse([("tz", name)]) }
        }
        #expect((try ReportQuery.parse([("by", "day"), ("tz", "UTC")])).rollupAnswers)
        #expect(!(try ReportQuery.parse([("by", "day"), ("tz", "Europe/Berlin")])).rollupAnswers)
        // Without day or week buckets the zone matters only for the time range.
        #expect((try ReportQuery.parse([("by", "campaign"), ("tz", "Europe/Berlin")])).rollupAnswers)
        #expect(!(try ReportQuery.parse([("by", "campaign"), ("tz", "Europe/Berlin"), ("from", "2026-11-01")])).rollupAnswers)
        let problem = #expect(throws: QueryProblem.self) { try ReportQuery.parse([("tz", "Europe/Berlin"), ("from", "1.11.2026")]) }
        #expect(problem?.message.contains("2026-11-01T08:30 (Europe/Berlin)") == true)
    }
}
