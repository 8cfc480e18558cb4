import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import AdServices
import JWS
import Store
import TestSupport
@testable import CountersignCLI
@testable import CountersignServer

/// Apple Ads names (issue 13, item 8): read through the real client from a stand-in of Apple's token endpoint,
/// Platform API and v5, with Apple's rules for tokens, 401 and 429, and shown in Apple Ads reports.
@Suite struct AppleAdsNameTests {
    static let platformOrg: Int64 = 40669820
    static let v5Org: Int64 = 50001
    static let v5Record = #"{"attribution": true, "orgId": 50001, "campaignId": 700, "conversionType": "Download", "claimType": "Click", "adGroupId": 701, "countryOrRegion": "US", "keywordId": 702, "adId": 1}"#

    /// Stores `bodies` as AdServices records, the way the token exchange does.
    static func storeRecords(_ store: StoreDatabase, _ bodies: [String]) async throws {
        for (index, body) in bodies.enumerated() {
            let record = try AttributionRecord.decode(adServicesResponse: Array(body.utf8)).get()
            _ = try await store.tokenJobs.enqueue(TokenSubmission(token: "dG9rZW4\(index)", app: "1108187390"), maximumOpen: 100)
            let job = try #require(try await store.tokenJobs.claimDue(now: Date(), limit: 1, lease: 60).first)
            #expect(try await store.tokenJobs.finishAttempt(job, answer: "200", notFound: false, serverFailure: false, update: .store(record, body: Array(body.utf8))))
        }
    }

    @Test(arguments: TestEngine.allCases) func namesComeFromThePlatformAPIOrV5AndShowInReports(engine: TestEngine) async throws {
        let key = try ECPrivateKey.generate()
        let standIn = AppleAdsAPIStandIn(publicKey: key.publicKey, platformAccounts: [Self.platformOrg: 123456789], names: [
            Self.platformOrg: ["campaign/542370539": "Trip Trek US", "ad_group/542317095": "Brand terms", "keyword/87675432": "trip planner"],
            Self.v5Org: ["campaign/700": "Legacy campaign", "ad_group/701": "Legacy group"],
        ])
        let database = LiveServer(engine: engine).settings.database
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        try await Self.storeRecords(store, [AdServicesExchangeTests.detailed, Self.v5Record])
        try await standIn.serve { base in
            var server = LiveServer(engine: engine)
            server.settings.database = database
            server.settings.appleAdsCredentials = AppleAdsAPI.Credentials(clientID: standIn.clientID, teamID: standIn.teamID, keyID: standIn.keyID, privateKey: key)
            server.settings.appleAdsTokenURL = base + "/auth/oauth2/token"
            server.settings.appleAdsAPIURL = base + "/v1/"
            server.settings.appleAdsV5URL = base + "/api/v5/"
            server.settings.appleAdsNamesInterval = 0.2
            let key = try await store.apiKeys.create(name: "analyst").key
            try await server.run { client in
                let deadline = Date().addingTimeInterval(30)
                while try await store.scalar("SELECT count(*) FROM apple_ads_names", as: Int.self) ?? 0 < 6, Date() < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                }
                let report = try await client.execute(uri: "/v1/adservices/report?by=campaign,ad_group,keyword&format=csv", method: .get,
                                                      headers: [.authorization: "Bearer \(key)"])
                let csv = String(buffer: report.body)
                #expect(csv.contains("542370539,Trip Trek US,542317095,Brand terms,87675432,trip planner,"), "\(csv)")
                // v5 named the campaign and ad group; Apple did not know keyword 702, which shows as its id alone.
                #expect(csv.contains("700,Legacy campaign,701,Legacy group,702,,"), "\(csv)")
            }
        }
        let stored = Dictionary(uniqueKeysWithValues: try await store.rows("SELECT kind, id, source FROM apple_ads_names").map {
            ("\(try $0.get("kind", as: String.self))/\(try $0.get("id", as: Int64.self))", try $0.get("source", as: String.self))
        })
        #expect(stored == ["campaign/542370539": "platform", "ad_group/542317095": "platform", "keyword/87675432": "platform",
                           "campaign/700": "v5", "ad_group/701": "v5", "keyword/702": "not_found"])

        // Apple's rules, as the stand-in saw them: every client secret was right; the refused token was replaced once.
        #expect(standIn.secretProblems.isEmpty, "\(standIn.secretProblems)")
        #expect(standIn.issuedTokens == ["access-1", "access-2"])
        let calls = standIn.calls
        #expect(calls.first?.status == 401 && calls.first?.token == "access-1")
        #expect(calls.dropFirst().allSatisfy { $0.token == "access-2" })
        // After the 429 the next request waited Apple's Retry-After (1 s).
        let limited = try #require(calls.firstIndex { $0.status == 429 })
        #expect(calls.count > limited + 1)
        if calls.count > limited + 1 { #expect(calls[limited + 1].at.timeIntervalSince(calls[limited].at) >= 0.9) }
        // Each API scoped its requests: the Platform API by ad account, v5 by org.
        #expect(calls.filter { $0.path.hasPrefix("/v1/") && $0.path != "/v1/acls" && $0.status != 401 }.allSatisfy { $0.context == "adAccountId=123456789" })
        #expect(calls.filter { $0.path.hasPrefix("/api/v5/") }.allSatisfy { $0.context == "orgId=50001" })
        #expect(calls.contains { $0.path == "/api/v5/campaigns/700/adgroups/701/targetingkeywords/702" && $0.status == 404 })

        let cli = try await countersign(["adservices", "report", "--database", database, "--by", "campaign", "--format", "json"])
        #expect(cli.stdout.contains(#""campaign_name":"Trip Trek US""#) && cli.stdout.contains(#""campaign_name":"Legacy campaign""#), "\(cli.stdout)")
    }

    @Test func credentialsGoTogetherAndTheKeyMustBeReadable() async throws {
        let work = Checkout.temporaryDirectory()
        let partial = try await countersign(["serve", "--database", work + "/db.sqlite", "--apple-ads-client-id", "x", "--port", "0"])
        #expect(partial.status == 2)
        #expect(partial.stderr.contains("apple-ads-client-id, apple-ads-team-id, apple-ads-key-id and apple-ads-private-key go together"), "\(partial.stderr)")
        let unreadable = try await countersign(["serve", "--database", work + "/db.sqlite", "--apple-ads-client-id", "x", "--apple-ads-team-id", "t",
                                          "--apple-ads-key-id", "k", "--apple-ads-private-key", work + "/missing.pem", "--port", "0"])
        #expect(unreadable.status == 2)
        #expect(unreadable.stderr.contains("--apple-ads-private-key"), "\(unreadable.stderr)")
        #expect(!unreadable.stderr.contains("missing.pem") || unreadable.stderr.contains("cannot read"), "the path appears only to say it cannot be read")
    }
}
