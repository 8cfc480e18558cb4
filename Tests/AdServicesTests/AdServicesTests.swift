import Foundation
import Testing
import JWS
@testable import AdServices

@Suite struct AttributionRecordTests {
    static let detailed = #"{"attribution": true, "orgId": 40669820, "campaignId": 542370539, "conversionType": "Download", "clickDate": "2024-10-08T17:17Z", "claimType": "Click", "adGroupId": 542317095, "countryOrRegion": "US", "keywordId": 87675432, "adId": 542317136, "supplyPlacement": "APPSTORE_SEARCH_RESULTS"}"#

    @Test func decodesApplesDetailedExample() throws {
        let record = try AttributionRecord.decode(adServicesResponse: Array(Self.detailed.utf8)).get()
        #expect(record.attribution)
        #expect(record.orgID == 40669820)
        #expect(record.adID == 542317136)
        #expect(record.conversionType == "download")
        #expect(record.claimType == "Click")
        #expect(record.isDetailed)
        #expect(record.clickDate == (try? Date("2024-10-08T17:17:00Z", strategy: .iso8601)))
        #expect(record.supplyPlacement == "APPSTORE_SEARCH_RESULTS")
        #expect(!record.isTestPayload)
    }

    @Test func standardViewThroughPreOrderAndUnknownFields() throws {
        let standard = #"{"attribution": true, "orgId": 1, "campaignId": 2, "adGroupId": 3, "conversionType": "preorder", "claimType": "Impression", "countryOrRegion": "GB", "newField": [1]}"#
        let record = try AttributionRecord.decode(adServicesResponse: Array(standard.utf8)).get()
        #expect(!record.isDetailed)
        #expect(record.conversionType == "preorder")
        #expect(record.unknownFields["newField"] == .array([.number("1")]))
        let unattributed = try AttributionRecord.decode(adServicesResponse: Array(#"{"attribution": false}"#.utf8)).get()
        #expect(!unattributed.attribution)
        #expect(unattributed.campaignID == nil)
    }

    @Test func detectsTheDeveloperModeTestPayload() throws {
        let test = #"{"attribution": true, "orgId": 1234567890, "campaignId": 1234567890, "conversionType": "Download", "clickDate": "2020-04-08T17:17Z", "claimType": "Click", "adGroupId": 1234567890, "countryOrRegion": "US", "keywordId": 123222, "adId": 542317136}"#
        #expect(try AttributionRecord.decode(adServicesResponse: Array(test.utf8)).get().isTestPayload)
    }

    @Test(arguments: [#"[1]"#, #"{}"#, #"{"attribution": "yes"}"#, #"{"attribution": true, "orgId": "x"}"#, #"{"attribution": true, "clickDate": "yesterday"}"#])
    func refusesMalformedResponses(text: String) {
        guard case .failure(let problem) = AttributionRecord.decode(adServicesResponse: Array(text.utf8)) else { Issue.record("accepted \(text)"); return }
        #expect(!problem.message.isEmpty)
    }
}

@Suite struct IAdDictionaryTests {
    /// Apple's example from adservices.md §5, as JSON (Apple shows an NSDictionary description).
    static let example = #"{"Version3.1": {"iad-attribution": "true", "iad-org-name": "org name", "iad-org-id": "40669820", "iad-campaign-id": "542370539", "iad-campaign-name": "campaign name", "iad-purchase-date": "2020-08-04T17:18:07Z", "iad-conversion-date": "2020-08-04T17:18:07Z", "iad-conversion-type": "newdownload", "iad-click-date": "2020-08-04T17:17:00Z", "iad-adgroup-id": "542317095", "iad-adgroup-name": "adgroup name", "iad-country-or-region": "US", "iad-keyword": "keyword", "iad-keyword-id": "87675432", "iad-keyword-matchtype": "Broad", "iad-ad-id": "542317136"}}"#

    @Test func normalisesApplesExample() throws {
        let record = try IAdDictionary.normalise(Array(Self.example.utf8)).get()
        #expect(record.source == .iAd)
        #expect(record.attribution)
        #expect(record.orgID == 40669820)
        #expect(record.orgName == "org name")
        #expect(record.campaignName == "campaign name")
        #expect(record.adGroupID == 542317095)
        #expect(record.keyword == "keyword")
        #expect(record.keywordMatchType == "Broad")
        #expect(record.adID == 542317136)
        #expect(record.conversionType == "download")
        #expect(record.countryOrRegion == "US")
        #expect(record.clickDate == (try? Date("2020-08-04T17:17:00Z", strategy: .iso8601)))
        #expect(record.purchaseDate != nil && record.conversionDate != nil)
    }

    @Test func legacyLineItemKeysAndBooleans() throws {
        let old = #"{"Version3.0": {"iad-attribution": true, "iad-lineitem-id": 77, "iad-lineitem-name": "line", "iad-conversion-type": "redownload", "iad-creativeset-id": "5"}}"#
        let record = try IAdDictionary.normalise(Array(old.utf8)).get()
        #expect(record.adGroupID == 77)
        #expect(record.adGroupName == "line")
        #expect(record.conversionType == "redownload")
        #expect(record.creativeSetID == 5)
        let none = try IAdDictionary.normalise(Array(#"{"Version3.1": {"iad-attribution": "false"}}"#.utf8)).get()
        #expect(!none.attribution)
    }

    /// The version key is matched by its text, not by what a reader sees: a key whose seventh letter carries a
    /// combining mark or emoji modifier (one grapheme with the `n`) still starts with `Version`, as docs/openapi.yaml
    /// states. The contract test's fuzzing sent `Version` followed by U+1F3FB and was refused.
    @Test(arguments: ["Version\u{1F3FB}3.1", "Version\u{0301}", "Version"])
    func versionKeyIsReadByItsScalars(key: String) throws {
        let body = #"{"\#(key)": {"iad-attribution": "true", "iad-org-id": "12"}}"#
        let record = try IAdDictionary.normalise(Array(body.utf8)).get()
        #expect(record.attribution && record.orgID == 12)
    }

    @Test(arguments: [#"{"iad-attribution": "true"}"#, #"{"Version3.1": {}}"#, #"{"Version3.1": {"iad-attribution": "maybe"}}"#,
                      #"{"Version3.1": {"iad-attribution": "true", "iad-org-id": "abc"}}"#, #"{"Version3.1": {"iad-attribution": "true", "iad-conversion-type": "upgrade"}}"#,
                      #"{"Version3.1": {"iad-attribution": "true"}, "Version3.0": {}}"#, "not json"])
    func refusesMalformedDictionaries(text: String) {
        guard case .failure(let problem) = IAdDictionary.normalise(Array(text.utf8)) else { Issue.record("accepted \(text)"); return }
        #expect(!problem.message.isEmpty)
    }

    /// Display spoofing: a name that a bidi override, a zero-width character or a noncharacter would disguise in the
    /// dashboard is refused on this public route, naming the key; plain names in any script and emoji are kept.
    @Test(arguments: [("campaign name", "camp\\u202Eign", "iad-campaign-name"), ("adgroup name", "\\u200Badgroup", "iad-adgroup-name"),
                      ("keyword", "key\\u2028word", "iad-keyword"), ("org name", "org\\uFDD0", "iad-org-name"),
                      ("campaign name", "a\\u200D\\u00ADb", "iad-campaign-name")])
    func refusesNamesThatDisguiseThemselves(original: String, disguised: String, field: String) throws {
        let text = Self.example.replacingOccurrences(of: "\"\(original)\"", with: "\"\(disguised)\"")
        #expect(text != Self.example)
        guard case .failure(let problem) = IAdDictionary.normalise(Array(text.utf8)) else { Issue.record("accepted \(text)"); return }
        #expect(problem.field == field)
        #expect(problem.message.contains("format") && problem.message.contains("noncharacter"), "\(problem)")
        let plain = Self.example.replacingOccurrences(of: "\"campaign name\"", with: "\"Café 🎮 東京\"")
        #expect(try IAdDictionary.normalise(Array(plain.utf8)).get().campaignName == "Café 🎮 東京")
    }
}

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy()

    @Test func applesSchedule() {
        #expect(policy.decide(.status(200), attempts: 1, notFoundAnswers: 0, serverFailures: 0, tokenAge: 10) == .store)
        #expect(policy.decide(.status(400), attempts: 1, notFoundAnswers: 0, serverFailures: 0, tokenAge: 10) == .fail(.tokenInvalid))
        #expect(policy.decide(.status(404), attempts: 1, notFoundAnswers: 1, serverFailures: 0, tokenAge: 10) == .retry(after: 5))
        #expect(policy.decide(.status(404), attempts: 2, notFoundAnswers: 2, serverFailures: 0, tokenAge: 15) == .retry(after: 5))
        #expect(policy.decide(.status(404), attempts: 3, notFoundAnswers: 3, serverFailures: 0, tokenAge: 20) == .fail(.notFound))
        #expect(policy.decide(.status(500), attempts: 1, notFoundAnswers: 0, serverFailures: 1, tokenAge: 10) == .retry(after: 5))
        #expect(policy.decide(.status(503), attempts: 2, notFoundAnswers: 0, serverFailures: 2, tokenAge: 20) == .retry(after: 10))
        #expect(policy.decide(.networkError, attempts: 5, notFoundAnswers: 0, serverFailures: 5, tokenAge: 100) == .retry(after: 80))
        #expect(policy.decide(.networkError, attempts: 30, notFoundAnswers: 0, serverFailures: 30, tokenAge: 1000) == .retry(after: 3600))
        #expect(policy.decide(.status(500), attempts: 9, notFoundAnswers: 0, serverFailures: 9, tokenAge: 24 * 3600 - 10) == .fail(.tokenExpired))
        #expect(policy.decide(.status(404), attempts: 1, notFoundAnswers: 1, serverFailures: 0, tokenAge: 24 * 3600 - 1) == .fail(.tokenExpired))
        #expect(policy.decide(.status(418), attempts: 1, notFoundAnswers: 0, serverFailures: 0, tokenAge: 1) == .fail(.unexpectedStatus(418)))
        #expect(policy.requestTimeout > 1, "Apple holds 404 answers for up to 1 s")
    }
}

@Suite struct TokenSubmissionTests {
    @Test func plainTextTokenWithSurroundingWhitespace() throws {
        let submission = try TokenSubmission.parse(Array(" QUJDRA+/=\n".utf8), contentType: "text/plain; charset=utf-8").get()
        #expect(submission == TokenSubmission(token: "QUJDRA+/="))
        #expect(try TokenSubmission.parse(Array("QUJDRA".utf8), contentType: nil).get().token == "QUJDRA")
    }

    @Test func jsonWithCallerIDsAndTokenTime() throws {
        let body = #"{"token": "QUJD", "app": "1108187390", "install-id": "i-1", "token-created-at": "2026-11-22T08:00:00Z"}"#
        let submission = try TokenSubmission.parse(Array(body.utf8), contentType: "application/json").get()
        #expect(submission.app == "1108187390")
        #expect(submission.installID == "i-1")
        #expect(submission.tokenCreatedAt == Date(timeIntervalSince1970: 1_795_334_400))
        // Without a content type, a body starting with "{" is JSON.
        #expect(try TokenSubmission.parse(Array(#" {"token": "QUJD"}"#.utf8), contentType: nil).get().token == "QUJD")
    }

    @Test(arguments: [
        ("", "text/plain", "token: is empty"),
        ("QU JD", "text/plain", "no spaces"),
        ("<token/>", "application/xml", "not application/xml"),
        (#"{"token": 5}"#, "application/json", "token: is required"),
        (#"{"token": "QUJD", "install_id": "x"}"#, "application/json", "install_id: unknown member"),
        (#"{"token": "QUJD", "token-created-at": "yesterday"}"#, "application/json", "token-created-at: must be"),
        (#"{"token": "QUJD", "install-id": "i-\u202E1"}"#, "application/json", "install-id: must be"),
        (#"{"token": "QUJD", "app": "\u200B1108187390"}"#, "application/json", "app: must be"),
        ("{", "application/json", "not a JSON object"),
    ])
    func refusesWithAClearReason(body: String, contentType: String, expected: String) {
        guard case .failure(let problem) = TokenSubmission.parse(Array(body.utf8), contentType: contentType) else {
            Issue.record("accepted \(body)")
            return
        }
        #expect(problem.description.contains(expected), "\(problem.description)")
    }

    @Test func refusesAnOverlongToken() {
        let token = String(repeating: "A", count: TokenSubmission.maximumTokenLength + 1)
        #expect(throws: RecordProblem.self) { try TokenSubmission.parse(Array(token.utf8), contentType: "text/plain").get() }
    }
}

@Suite struct AppleAdsAPINameTests {
    /// Display spoofing: a name from Apple's API holding a bidi override, a zero-width character or a noncharacter is
    /// no name, so the campaign stays shown by its id rather than in disguise.
    @Test func disguisedNamesAreLeftUnnamed() {
        let campaign = AppleAdsAPI.Entity.campaign(org: 40669820, campaign: 542370539)
        #expect(AppleAdsAPI.name(of: campaign, from: Array(#"{"data": {"id": 542370539, "name": "Summer 🎮 東京"}}"#.utf8)) == "Summer 🎮 東京")
        for disguised in [#"Sum\u202Emer"#, #"\u200BSummer"#, #"Summer\uFEFF"#, #"Summer\uDBFF\uDFFF"#] {
            #expect(AppleAdsAPI.name(of: campaign, from: Array(#"{"data": {"id": 542370539, "name": "\#(disguised)"}}"#.utf8)) == nil, "\(disguised)")
        }
        let keyword = AppleAdsAPI.Entity.keyword(org: 1, campaign: 2, adGroup: 3, keyword: 4)
        #expect(AppleAdsAPI.name(of: keyword, from: Array(#"{"result": {"text": "puzzle\u2029game"}}"#.utf8)) == nil)
    }
}
