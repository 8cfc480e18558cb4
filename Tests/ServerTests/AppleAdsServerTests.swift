import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Testing
import JWS
import Store
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// Legacy iAd dictionaries over HTTP, and the records API.
@Suite struct AppleAdsServerTests {
    static let example = #"{"Version3.1": {"iad-attribution": "true", "iad-org-name": "org name", "iad-org-id": "40669820", "iad-campaign-id": "542370539", "iad-campaign-name": "campaign name", "iad-purchase-date": "2020-08-04T17:18:07Z", "iad-conversion-date": "2020-08-04T17:18:07Z", "iad-conversion-type": "newdownload", "iad-click-date": "2020-08-04T17:17:00Z", "iad-adgroup-id": "542317095", "iad-adgroup-name": "adgroup name", "iad-country-or-region": "US", "iad-keyword": "keyword", "iad-keyword-id": "87675432", "iad-keyword-matchtype": "Broad", "iad-ad-id": "542317136"}}"#

    @Test(arguments: TestEngine.allCases) func iAdDictionariesAreNormalisedStoredAndListed(engine: TestEngine) async throws {
        let server = LiveServer(engine: engine)
        let key = try await TestStore.open(StoreSettings(location: try DatabaseLocation(server.settings.database))).apiKeys.create(name: "ads").key
        try await server.run { client in
            let stored = try await client.execute(uri: "/v1/iad/attribution?app=1108187390&install_id=abc", method: .post, body: ByteBuffer(string: Self.example))
            #expect(stored.status == .ok)
            #expect(stored.json?["attribution"] == .bool(true))
            let malformed = try await client.execute(uri: "/v1/iad/attribution", method: .post, body: ByteBuffer(string: #"{"iad-attribution": "true"}"#))
            #expect(malformed.status == .badRequest)
            #expect(malformed.json?["error"] == .string("invalid_iad_dictionary"))
            #expect(malformed.json?["message"]?.string?.contains("Version3.1") == true)
            let unauthorised = try await client.execute(uri: "/v1/adservices/records", method: .get)
            #expect(unauthorised.status == .unauthorized)
            let listed = try await client.execute(uri: "/v1/adservices/records", method: .get, headers: [.authorization: "Bearer \(key)"])
            guard case .array(let rows) = listed.json?["rows"], let row = rows.first?.object else { Issue.record("no records"); return }
            #expect(rows.count == 1)
            #expect(row["source"] == .string("iad"))
            #expect(row["app"] == .string("1108187390"))
            #expect(row["install_id"] == .string("abc"))
            #expect(row["org_id"] == .number("40669820"))
            #expect(row["campaign_name"] == .string("campaign name"))
            #expect(row["conversion_type"] == .string("download"))
            #expect(row["click_date"] == .string("2020-08-04T17:17:00.000Z"))
        }
        let viewCount = try await server.scalar("SELECT count(*) FROM apple_ads_attributions WHERE attribution = 1", as: Int.self)
        #expect(viewCount == 1)
    }
}
