import CountersignServer
import Foundation
import Testing
import JWS
import Postback
import PostbackMint
import Spend
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

    /// A list in the layout networks publish: two lists in one file, an id with capitals and a space, a repeat, a
    /// conflicting name, and entries no network id or name can come from.
    static let publishedList = """
        [{"company_name": "Example SDK", "skadnetwork_ids": [
          {"entity_name": "Alpha Ads Ltd", "skadnetwork_id": "alpha12345.skadnetwork", "creation_date": "2020-08-14T00:00:00.000Z"},
          {"entity_name": " Beta Inc.", "skadnetwork_id": "BETA123456.skadnetwork "},
          {"entity_name": "Alpha Ads Ltd", "skadnetwork_id": "alpha12345.skadnetwork"},
          {"entity_name": "Alpha Other", "skadnetwork_id": "alpha12345.skadnetwork"},
          {"entity_name": "Nobody", "skadnetwork_id": "not an id"},
          {"skadnetwork_id": "gamma12345.skadnetwork"},
          {"entity_name": "Bad\\u202Ename", "skadnetwork_id": "delta12345.skadnetwork"}]},
         {"skadnetwork_ids": [{"entity_name": "Epsilon", "skadnetwork_id": "eps1234567.skadnetwork"}]}]
        """

    /// Finding 13 (issue 49): reports showed `ludvb6z3bs.skadnetwork` until someone typed each company's name. A list as
    /// networks publish it is read with each skipped entry and why.
    @Test func aPublishedListIsReadWithWhatItSkips() throws {
        let list = try AdNetworkList.parse(Array(Self.publishedList.utf8))
        #expect(list.entries == [AdNetworkList.Entry(adNetworkID: "alpha12345.skadnetwork", name: "Alpha Ads Ltd"),
                                 AdNetworkList.Entry(adNetworkID: "beta123456.skadnetwork", name: "Beta Inc."),
                                 AdNetworkList.Entry(adNetworkID: "eps1234567.skadnetwork", name: "Epsilon")])
        // The repeat with the same name is no problem; the other four are, each at its place in the file.
        #expect(list.skipped.map(\.entry) == [4, 5, 6, 7], "\(list.skipped)")
        #expect(list.skipped[0].reason.contains("\"Alpha Ads Ltd\" earlier"), "\(list.skipped[0])")
        for text in ["", "{}", "[1, 2]", "{\"skadnetwork_ids\": 3}", "not json"] {
            #expect(throws: AdNetworkList.Problem.self, "\(text)") { try AdNetworkList.parse(Array(text.utf8)) }
        }
        let many = "{\"skadnetwork_ids\": [" + Array(repeating: "{}", count: AdNetworkList.maximumEntries + 1).joined(separator: ",") + "]}"
        #expect(throws: AdNetworkList.Problem.self) { try AdNetworkList.parse(Array(many.utf8)) }
    }

    @Test(arguments: TestEngine.allCases) func importingAListNamesNetworksAndKeepsNamesPeopleGave(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await store.names.setAdNetwork("beta123456.skadnetwork", name: "Beta (our name)")
        let entries = try AdNetworkList.parse(Array(Self.publishedList.utf8)).entries
        #expect(try await store.names.importAdNetworks(entries, replace: false) == .init(added: 2, renamed: 0, kept: 1, unchanged: 0))
        func names() async throws -> [String: String] {
            Dictionary(uniqueKeysWithValues: try await store.names.adNetworks().map { ($0.adNetworkID, $0.name) })
        }
        #expect(try await names() == ["alpha12345.skadnetwork": "Alpha Ads Ltd", "beta123456.skadnetwork": "Beta (our name)", "eps1234567.skadnetwork": "Epsilon"])
        // Imported again, nothing changes; with replace, the list's name wins.
        #expect(try await store.names.importAdNetworks(entries, replace: false) == .init(added: 0, renamed: 0, kept: 1, unchanged: 2))
        #expect(try await store.names.importAdNetworks(entries, replace: true) == .init(added: 0, renamed: 1, kept: 0, unchanged: 2))
        #expect(try await names()["beta123456.skadnetwork"] == "Beta Inc.")
        await #expect(throws: NameRegistry.Problem.self) {
            try await store.names.importAdNetworks([AdNetworkList.Entry(adNetworkID: "Bad Id", name: "x")], replace: false)
        }
        #expect(try await names().count == 3, "a refused list changes nothing")
    }
}
