import Foundation
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// `cohorts_daily.install_day` is the estimated install day in the app's registered zone, named in `time_zone`, as
/// performance counts an app's days (issue 49, finding 2: it was the UTC day, 341 installs against the CLI's 342).
@Suite struct CohortZoneTests {
    @Test(arguments: TestEngine.allCases) func cohortsCountTheAppsOwnInstallDays(engine: TestEngine) async throws {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        let store = try engine.freshStore()
        let app: AppID = 10738027756
        try await store.apps.set(AppRegistry.Entry(app: app, name: "Zoned", timeZone: "Europe/Berlin"))
        // Installs arriving every 40 minutes across two Berlin midnights.
        let start = try #require(Timestamp.parse("2026-11-04T20:00:00Z"))
        for index in 0..<60 {
            var fields = AAKPostbackFields(postbackID: Mint.uuid("C-\(index)"))
            fields.advertisedItemID = app.number
            let body = try Mint.aak(fields, key: key, keyID: "net/0")
            let result = verifier.verify(body)
            #expect(try store.ledger.persist([Intake(receivedAt: start.addingTimeInterval(Double(index) * 2400), remoteAddress: nil, route: .any, body: body,
                                                     result: result, decision: TrustPolicy(allowDevelopment: false).decide(result))]) == [.stored])
        }
        // The oracle: each counted winning first-window install's estimated install time, as a Berlin day here.
        var berlin = Calendar(identifier: .gregorian)
        berlin.timeZone = TimeZone(identifier: "Europe/Berlin")!
        var expected: [String: Int] = [:]
        for estimated in try await store.column("SELECT estimated_install_at FROM conversions WHERE countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install'", as: String.self) {
            let parts = berlin.dateComponents([.year, .month, .day], from: try #require(Timestamp.parse(estimated)))
            expected[String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!), default: 0] += 1
        }
        #expect(expected.count >= 3 && expected.values.reduce(0, +) == 60)
        var viewed: [String: Int] = [:]
        for row in try await store.rows("SELECT install_day, installs, time_zone FROM cohorts_daily") {
            #expect(try row.get(at: 2, as: String.self) == "Europe/Berlin")
            viewed[try row.get(at: 0, as: String.self), default: 0] += try row.get(at: 1, as: Int.self)
        }
        #expect(viewed == expected)
    }
}
