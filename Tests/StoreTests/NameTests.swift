import CountersignServer
import Foundation
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// Names that hold across ad networks (issue 13, items 6 and 7): the same digits on two networks, the ad-network
/// registry, schema names per network, Apple Ads' placements, and digits where nobody gave a name.
@Suite struct NameTests {
    static let app: AppID = 10738027756

    static func fill(_ store: StoreDatabase) async throws {
        let key = try ECPrivateKey.generate()
        let verifier = PostbackVerifier(keyRing: try KeyRing([KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test")]))
        func intake(_ body: [UInt8]) -> Intake {
            let result = verifier.verify(body)
            return Intake(receivedAt: Date(), remoteAddress: nil, route: .any, body: body, result: result, decision: TrustPolicy().decide(result))
        }
        var intakes: [Intake] = []
        // Campaign 12 on two networks, 3 and 2 postbacks; campaign 13 on the first, named by nobody.
        for (network, source, count) in [("alpha.adattributionkit", "1231", 3), ("beta.adattributionkit", "1231", 2), ("alpha.adattributionkit", "1311", 1)] {
            for index in 0..<count {
                var fields = AAKPostbackFields(postbackID: Mint.uuid("\(network)-\(source)-\(index)"))
                fields.adNetworkID = network
                fields.sourceIdentifier = source
                fields.advertisedItemID = app.number
                fields.conversionValue = 1
                intakes.append(intake(try Mint.aak(fields, key: key, keyID: "net/0")))
            }
        }
        // Apple Ads' SKAdNetwork postbacks: the campaign id is the placement.
        for (index, placement) in [10, 20, 20, 40].enumerated() {
            var fields = SKANPostbackFields(transactionID: Mint.uuid("apple-ads-\(index)"))
            fields.version = .v3_0
            fields.adNetworkID = "com.apple.ads"
            fields.campaignID = Int64(placement)
            fields.appID = app.number
            intakes.append(intake(try Mint.skan(fields, key: key)))
        }
        _ = try store.ledger.persist(intakes)
    }

    static func counts(_ store: StoreDatabase, by dimension: String, where parameters: [(String, String)] = []) async throws -> [String: Int] {
        let table = try await store.reports.report(try ReportQuery.parse([("by", dimension)] + parameters))
        let name = try #require(table.columns.firstIndex(of: dimension)), postbacks = try #require(table.columns.firstIndex(of: "postbacks"))
        var counts: [String: Int] = [:]
        for row in table.rows { counts[row[name].string ?? "<\(row[name])>", default: 0] += Int(row[postbacks].int64 ?? 0) }
        return counts
    }

    @Test(arguments: TestEngine.allCases) func twoNetworksUsingTheSameDigitsShowTheirOwnNames(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        // The app's schema names campaign 12 "Summer sale" for every network, and "Alpha summer" for alpha's ads.
        var schema = try #require(try JSONSerialization.jsonObject(with: Data(try ExampleSchema.document("shop"))) as? [String: Any])
        var levels = try #require(schema["source-identifier"] as? [[String: Any]])
        levels[0]["names"] = ["12": "Summer sale"]
        levels[0]["network-names"] = ["alpha.adattributionkit": ["12": "Alpha summer"]]
        schema["source-identifier"] = levels
        let document = Array(try JSONSerialization.data(withJSONObject: schema))
        guard case .stored = try await store.schemas.put(app: Self.app, document: document) else {
            Issue.record("schema refused"); return
        }
        try await Self.fill(store)

        #expect(try await Self.counts(store, by: "campaign_name") == [
            "Alpha summer": 3, "Summer sale": 2, "13": 1, "Search Results": 1, "Search Tab": 2, "Product Pages": 1,
        ])
        // A name given through the registry wins over the schema's, for that network only.
        try await store.names.setSourceName(app: Self.app, adNetwork: "beta.adattributionkit", level: .campaign, digits: "12", name: "Beta spring")
        try await store.names.setSourceName(app: Self.app, adNetwork: "alpha.adattributionkit", level: .adGroup, digits: "3", name: "Europe (alpha)")
        let named = try await Self.counts(store, by: "campaign_name")
        #expect(named["Beta spring"] == 2 && named["Alpha summer"] == 3 && named["Summer sale"] == nil, "\(named)")
        let groups = try await Self.counts(store, by: "ad_group_name", where: [("protocol", "aak")])
        #expect(groups == ["Europe (alpha)": 3, "Japan": 2, "US": 1], "\(groups)")

        // The registry names networks; Apple Ads is named without being told; others show their ids.
        #expect(try await Self.counts(store, by: "ad_network_name") == ["alpha.adattributionkit": 4, "beta.adattributionkit": 2, "Apple Ads": 4])
        try await store.names.setAdNetwork("alpha.adattributionkit", name: "Alpha Media")
        #expect(try await Self.counts(store, by: "ad_network_name") == ["Alpha Media": 4, "beta.adattributionkit": 2, "Apple Ads": 4])
        #expect(try await store.names.removeAdNetwork("alpha.adattributionkit"))
        #expect(try await !store.names.removeAdNetwork("alpha.adattributionkit"))
        #expect(try await Self.counts(store, by: "ad_network_name")["alpha.adattributionkit"] == 4)

        // Bad input is refused with what to send.
        await #expect(throws: NameRegistry.Problem.self) { try await store.names.setAdNetwork("Not A Network", name: "x") }
        await #expect(throws: NameRegistry.Problem.self) {
            try await store.names.setSourceName(app: Self.app, adNetwork: "alpha.adattributionkit", level: .campaign, digits: "123", name: "x")
        }
        await #expect(throws: NameRegistry.Problem.self) { try await store.names.setAdNetwork("alpha.adattributionkit", name: "") }
    }
}
