import Foundation
import Testing
import JWS
import Postback
import PostbackMint
import Store
import TestSupport

/// `reconcile --from/--to` are days in the app's registered zone when it names an app, as docs/cli.md says (issue 49,
/// finding 3: they were UTC days, so 985 postbacks were `not_claimed` where the app's days give 990).
@Suite struct ReconcileZoneTests {
    @Test func reconcileDaysAreTheAppsOwnDays() async throws {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")]))
        let work = Checkout.temporaryDirectory()
        let database = work + "/reconcile.sqlite"
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        let app: AppID = 10738027756
        let network = "net-z.adattributionkit"
        try await store.apps.set(AppRegistry.Entry(app: app, name: "Zoned", adNetworks: [network], timeZone: "Europe/Berlin"))
        // Around the ends of 2 November: in Berlin (UTC+1) the first is on the 2nd and the last on the 3rd.
        let times = ["2026-11-01T22:30:00Z", "2026-11-01T23:30:00Z", "2026-11-02T12:00:00Z", "2026-11-02T22:30:00Z", "2026-11-02T23:30:00Z"]
        var identifiers: [String: String] = [:]
        for (index, time) in times.enumerated() {
            var fields = AAKPostbackFields(postbackID: Mint.uuid("Z-\(index)"))
            fields.adNetworkID = network
            fields.advertisedItemID = app.number
            let body = try Mint.aak(fields, key: key, keyID: "net/0")
            let result = verifier.verify(body)
            let intake = Intake(receivedAt: try #require(Timestamp.parse(time)), remoteAddress: nil, route: .any, body: body, result: result,
                                decision: TrustPolicy(allowDevelopment: false).decide(result))
            #expect(try store.ledger.persist([intake]) == [.stored])
            identifiers[fields.postbackID.lowercased()] = time
        }
        store.close()
        // Which arrived on 2 November in Berlin, computed here from the times.
        var berlin = Calendar(identifier: .gregorian)
        berlin.timeZone = TimeZone(identifier: "Europe/Berlin")!
        let expected = Set(identifiers.filter { berlin.dateComponents([.day], from: Timestamp.parse($0.value)!).day == 2 }.keys)
        #expect(expected.count == 3)
        try Data("00000000-0000-4000-8000-000000000000\n".utf8).write(to: URL(fileURLWithPath: work + "/claimed.txt"))
        func notClaimed(_ extra: [String]) async throws -> Set<String> {
            let run = try await countersign(["reconcile", work + "/claimed.txt", "--ad-network", network, "--from", "2026-11-02", "--to", "2026-11-03",
                                             "--format", "ndjson", "--database", database] + extra)
            #expect(run.status == 0, "\(run.stderr)")
            return Set(run.stdout.split(separator: "\n").compactMap { line in
                guard let row = try? JSONParser.parse(Array(line.utf8)).object, row["status"] == .string("not_claimed") else { return nil }
                return row["identifier"]?.string?.lowercased()
            })
        }
        #expect(try await notClaimed(["--app", String(app)]) == expected, "the app's own days")
        #expect(try await notClaimed(["--app", String(app), "--tz", "Europe/Berlin"]) == expected)
        let utc = Set(identifiers.filter { $0.value.hasPrefix("2026-11-02") }.keys)
        #expect(try await notClaimed(["--app", String(app), "--tz", "UTC"]) == utc, "--tz names another zone")
    }
}
