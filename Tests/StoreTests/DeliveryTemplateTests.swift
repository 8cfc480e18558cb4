import Foundation
import Testing
import JWS
import Postback
import PostbackMint
import Spend
@testable import Store
import TestSupport

/// Delivery templates and partner headers (issue 48, deliverables 1-3): template files checked member by member,
/// bodies made from Apple's fields as received and facts that equal the raw rows, secrets kept apart and never shown,
/// and test deliveries that queue nothing.
@Suite struct DeliveryTemplateTests {
    static let key = try! ECPrivateKey.generate()
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
    ]))
    static let network = "net-a.adattributionkit"
    static let app: AppID = 10738027756

    func intake(_ body: [UInt8]) -> Intake {
        let result = verifier.verify(body)
        return Intake(receivedAt: Date(), remoteAddress: "203.0.113.9", route: .any, body: body, result: result,
                      decision: TrustPolicy(allowDevelopment: true).decide(result))
    }

    func aak(_ id: String, source: String = "1234", value: Int? = 7, country: String? = "DE") throws -> [UInt8] {
        var fields = AAKPostbackFields(postbackID: Mint.uuid(id))
        fields.adNetworkID = Self.network
        fields.sourceIdentifier = source
        fields.conversionValue = value
        fields.countryCode = country
        return try Mint.aak(fields, key: Self.key, keyID: "net/0")
    }

    static func file(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func shippedTemplatesParseAndSayWhereTheirLayoutIsDocumented() {
        #expect(DeliveryTemplateStore.shipped.map(\.name) == ["original", "airbridge", "appmetrica", "branch", "enriched", "pull", "unity"])
        for template in DeliveryTemplateStore.shipped where !template.isOriginal {
            #expect(template.source == "countersign" || template.source.hasPrefix("https://"), "\(template.name)")
            #expect(template.appleFields, "\(template.name) keeps Apple's fields")
            // A template's own file, as shown, reads back as the same template.
            #expect((try? DeliveryTemplate.parse(Array(JSONValue.object(template.json).prettyPrinted.utf8))) == template)
        }
    }

    @Test func aTemplateFileIsCheckedMemberByMember() {
        let cases: [(String, String)] = [
            ("[]", "file"),
            (#"{"template": "x", "source": "countersign", "fields": {}, "extra": 1}"#, "extra"),
            (#"{"template": "Bad Name", "source": "countersign", "fields": {}}"#, "template"),
            (#"{"template": "original", "source": "countersign", "fields": {}}"#, "template"),
            (#"{"template": "x", "fields": {}}"#, "source"),
            (#"{"template": "x", "description": {}, "source": "countersign", "fields": {}}"#, "description"),
            (#"{"template": "x", "source": "countersign"}"#, "fields"),
            (#"{"template": "x", "source": "countersign", "fields": {"a": "no_such_fact"}}"#, "fields.a"),
            (#"{"template": "x", "source": "countersign", "fields": {"a": {"fact": "campaign", "as": "number"}}}"#, "fields.a.as"),
            (#"{"template": "x", "source": "countersign", "fields": {"did-win": "campaign"}}"#, "fields.did-win"),
            (#"{"template": "x", "source": "countersign", "fields": {"countersign-test": "campaign"}}"#, "fields.countersign-test"),
            (#"{"template": "x", "source": "countersign", "apple_fields": false, "fields": {}}"#, "fields"),
            (#"{"template": "x", "source": "countersign", "apple_fields": "yes", "fields": {}}"#, "apple_fields"),
        ]
        for (text, field) in cases {
            #expect(throws: DeliveryTemplate.Problem.self, "\(text)") { try DeliveryTemplate.parse(Self.file(text)) }
            do { _ = try DeliveryTemplate.parse(Self.file(text)) } catch { #expect(error.field == field, "\(text): \(error)") }
        }
        #expect(throws: DeliveryTemplate.Problem.self) { try DeliveryTemplate.parse(Array(repeating: 0x20, count: DeliveryTemplate.maximumBytes + 1)) }
    }

    @Test func aBodyKeepsApplesFieldsAsReceivedAndLeavesOutFactsThePostbackLacks() throws {
        let template = try DeliveryTemplate.parse(Self.file(#"""
            {"template": "t", "source": "countersign", "fields": {"cid": "campaign", "name": "campaign_name", "ts": {"fact": "received_at_unix", "as": "text"}, "win": "did_win"}}
            """#))
        let apple = Self.file(#"{"jws-string": "a.b.c", "conversion-value": 7, "country-code": "DE"}"#)
        let facts = DeliveryFacts([.campaign: .string("07"), .receivedAtUnix: .number("1700000000"), .didWin: .bool(true)])
        let body = try #require(try JSONParser.parse(template.render(appleBody: apple, facts: facts)).object)
        #expect(body.members.map(\.key) == ["jws-string", "conversion-value", "country-code", "cid", "ts", "win"])
        #expect(body["conversion-value"] == .number("7") && body["cid"] == .string("07") && body["ts"] == .string("1700000000") && body["win"] == .bool(true))
        #expect(body["name"] == nil, "a fact the postback lacks is left out, never null")
        let spaced = Self.file("{\"jws-string\": \"a.b.c\",\n  \"amount\": 1.50e0 }\n")
        #expect(template.render(appleBody: spaced, facts: facts) == Self.file("{\"jws-string\": \"a.b.c\",\n  \"amount\": 1.50e0 ,\"cid\":\"07\",\"ts\":\"1700000000\",\"win\":true}"),
                "Apple's members byte for byte, the facts added before the closing brace")
        #expect(template.render(appleBody: Self.file("{}"), facts: facts) == Self.file(#"{"cid":"07","ts":"1700000000","win":true}"#))
        // original sends the bytes themselves; a test of it adds only the marker.
        #expect(DeliveryTemplate.originalTemplate.render(appleBody: apple, facts: facts) == apple)
        let test = try #require(try JSONParser.parse(DeliveryTemplate.originalTemplate.render(appleBody: apple, facts: .none, test: true)).object)
        #expect(test.members.map(\.key) == ["jws-string", "conversion-value", "country-code", "countersign-test"])
    }

    /// A member Apple's documentation does not name keeps its value when a template has the same key (the fact is
    /// left out, so no key appears twice); facts holding quotes or controls are escaped; without Apple's fields the
    /// body is the facts alone.
    @Test func aBodyNeverRepeatsAKeyAndEscapesItsFacts() throws {
        let template = try DeliveryTemplate.parse(Self.file(#"{"template": "t", "source": "countersign", "fields": {"extra": "campaign", "name": "campaign_name"}}"#))
        let facts = DeliveryFacts([.campaign: .string("07"), .campaignName: .string("Spring \"sale\"\n\u{1}")])
        let body = template.render(appleBody: Self.file(#"{"extra": "Apple's", "conversion-value": 7}"#), facts: facts)
        #expect(body == Self.file(#"{"extra": "Apple's", "conversion-value": 7,"name":"Spring \"sale\"\n\u0001"}"#))
        let read = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(read["extra"] as? String == "Apple's" && read["name"] as? String == "Spring \"sale\"\n\u{1}")
        let alone = try DeliveryTemplate.parse(Self.file(#"{"template": "a", "source": "countersign", "apple_fields": false, "fields": {"extra": "campaign"}}"#))
        #expect(alone.render(appleBody: Self.file(#"{"extra": 1}"#), facts: facts) == Self.file(#"{"extra":"07"}"#))
        #expect(alone.render(appleBody: Self.file(#"{"extra": 1}"#), facts: .none) == Self.file("{}"))
        #expect(alone.render(appleBody: Self.file("{}"), facts: .none, test: true) == Self.file(#"{"countersign-test":true}"#))
    }

    /// The install day a body carries is the Gregorian calendar's day of the moment in the app's zone, for moments
    /// across two centuries (leap days, days before 1970, zones with half-hour and 45-minute offsets).
    @Test func theInstallDayIsTheCalendarsDayInTheZone() throws {
        for name in ["UTC", "Europe/Berlin", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Chatham"] {
            let zone = try #require(TimeZone(identifier: name))
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            var seconds: Int64 = -2_208_988_800  // 1900-01-01
            while seconds < 4_102_444_800 {  // 2100-01-01
                let moment = Date(timeIntervalSince1970: TimeInterval(seconds))
                let parts = calendar.dateComponents([.year, .month, .day], from: moment)
                let expected = String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
                #expect(DeliveryFactsReader.day(moment, in: zone) == expected, "\(name) \(seconds)")
                seconds += 86_400 * 13 + 3_607 * 7
            }
        }
    }

    @Test(arguments: TestEngine.allCases) func enrichedBodiesCarryWhatTheRawRowsHold(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        try await store.apps.set(AppRegistry.Entry(app: Self.app, name: "Puzzle", timeZone: "Europe/Berlin"))
        try await store.names.setAdNetwork(Self.network, name: "Net A")
        try await store.names.setSourceName(app: Self.app, adNetwork: Self.network, level: .campaign, digits: "12", name: "Spring")
        try await store.names.setSourceName(app: Self.app, adNetwork: Self.network, level: .adGroup, digits: "3", name: "Video")
        try await store.forwarding.set(ForwardRule(name: "mmp", url: "http://127.0.0.1:1/mmp", template: "enriched"),
                                       header: .set(try PartnerHeader(name: "ABX-TOKEN", value: "tok-enriched-1")))
        let body = try aak("E")
        #expect(try store.ledger.persist([intake(body)]) == [.stored])
        // The raw row, read from the table, and the install day in the app's zone computed here.
        let raw = try #require(try await store.rows("SELECT dedup_key, received_at, source_digits, conversion_value, country_code FROM postbacks").first)
        let estimated = try #require(try await store.scalar("SELECT estimated_install_at FROM conversions", as: String.self))
        var berlin = Calendar(identifier: .gregorian)
        berlin.timeZone = TimeZone(identifier: "Europe/Berlin")!
        let parts = berlin.dateComponents([.year, .month, .day], from: try #require(Timestamp.parse(estimated)))
        let installDay = String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
        // Spend in two countries that day: 30 + 20 EUR over 15 + 5 claimed installs is 2.50 an install.
        let rows = [SpendRow(day: installDay, app: Self.app, adNetwork: Self.network, campaign: "12", country: "DE", claimedInstalls: 15, spendMicros: 30_000_000, currency: "EUR"),
                    SpendRow(day: installDay, app: Self.app, adNetwork: Self.network, campaign: "12", country: "US", claimedInstalls: 5, spendMicros: 20_000_000, currency: "EUR")]
        _ = try await store.spend.importSpend(rows, provenance: ImportProvenance(importedBy: "test", fileName: nil, format: "generic", bytes: [1]))

        let delivery = try #require(try await store.forwarding.claim(partner: "mmp", limit: 10, now: Date()).first)
        #expect(delivery.header?.name == "ABX-TOKEN" && delivery.header?.value == "tok-enriched-1")
        let sent = try #require(try JSONParser.parse(delivery.body).object)
        for member in try #require(try JSONParser.parse(body).object).members {
            #expect(sent[member.key] == member.value, "Apple's \(member.key) as received")
        }
        let digits = try raw.get("source_digits", as: String.self)
        let receivedAt = try raw.get("received_at", as: String.self)
        #expect(sent["dedup_key"] == .string(try raw.get("dedup_key", as: String.self)))
        #expect(sent["received_at"] == .string(receivedAt))
        #expect(sent["received_at_unix"] == .number(String(Int64(try #require(Timestamp.parse(receivedAt)).timeIntervalSince1970))))
        #expect(sent["campaign"] == .string(String(digits.prefix(2))) && sent["campaign_name"] == .string("Spring"))
        #expect(sent["ad_group"] == .string("3") && sent["ad_group_name"] == .string("Video"))
        #expect(sent["creative"] == .string("4") && sent["creative_name"] == .string("4"), "no name given: the digits")
        #expect(sent["ad_network_name"] == .string("Net A") && sent["app_name"] == .string("Puzzle"))
        #expect(sent["conversion_value"] == .number(String(try raw.get("conversion_value", as: Int64.self))))
        #expect(sent["country_code"] == .string(try raw.get("country_code", as: String.self)))
        #expect(sent["view_through"] == .bool(false) && sent["conversion_window"] == .number("0") && sent["conversion_class"] == .string("install"))
        #expect(sent["install_day"] == .string(installDay) && sent["estimated_install_at"] == .string(estimated))
        #expect(sent["cost_per_install"] == .number("2.50") && sent["cost_currency"] == .string("EUR"))
        #expect(sent["revenue_mid"] == nil && sent["currency"] == nil, "no schema: no revenue, never zero")
        // The same postback through a partner's layout: its own keys, the address it came from, the time as text.
        try await store.forwarding.set(ForwardRule(name: "mmp", url: "http://127.0.0.1:1/mmp", template: "appmetrica"))
        let metrica = try #require(try await store.forwarding.testDelivery(rule: "mmp"))
        let layout = try #require(try JSONParser.parse(metrica.body).object)
        #expect(layout["ad-network-campaign-name"] == .string("Spring") && layout["ad-network-adset-id"] == .string("3"))
        let unix = String(Int64(try #require(Timestamp.parse(receivedAt)).timeIntervalSince1970))
        #expect(layout["ip"] == .string("203.0.113.9") && layout["timestamp"] == .string(unix))
        #expect(metrica.header?.value == "tok-enriched-1", "the header is kept when the rule is set again without one")
    }

    @Test(arguments: TestEngine.allCases) func templatesOfOnesOwnAreSharedAndGuarded(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let mine = Self.file(#"{"template": "mine", "source": "https://partner.example/docs", "apple_fields": false, "fields": {"cid": "campaign", "ts": {"fact": "received_at_unix", "as": "text"}}}"#)
        try await store.deliveryTemplates.set(file: mine)
        #expect(try await store.deliveryTemplates.all().filter { !$0.shipped }.map(\.template.name) == ["mine"])
        await #expect(throws: ForwardingOutbox.Refusal.noSuchTemplate("nope")) {
            try await store.forwarding.set(ForwardRule(name: "r", url: "http://127.0.0.1:1/r", template: "nope"))
        }
        await #expect(throws: DeliveryTemplateStore.Refusal.shipped("branch")) {
            try await store.deliveryTemplates.set(file: Self.file(#"{"template": "branch", "source": "countersign", "fields": {}}"#))
        }
        try await store.forwarding.set(ForwardRule(name: "r", url: "http://127.0.0.1:1/r", template: "mine"))
        await #expect(throws: DeliveryTemplateStore.Refusal.inUse(template: "mine", rules: ["r"])) { try await store.deliveryTemplates.remove("mine") }
        await #expect(throws: ForwardingOutbox.Refusal.nothingToTest("r")) { try await store.forwarding.testDelivery(rule: "r") }
        #expect(try await store.forwarding.testDelivery(rule: "absent") == nil)

        #expect(try store.ledger.persist([intake(try aak("M", source: "5678"))]) == [.stored])
        // A test delivery is marked, keyed apart, and leaves the outbox as it was.
        let test = try #require(try await store.forwarding.testDelivery(rule: "r"))
        #expect(test.dedupKey.hasPrefix("test-"))
        let testBody = try #require(try JSONParser.parse(test.body).object)
        #expect(testBody["cid"] == .string("56") && testBody["countersign-test"] == .bool(true) && testBody["jws-string"] == nil)
        #expect(try await store.scalar("SELECT count(*) FROM forward_outbox WHERE attempts = 0 AND claim_id IS NULL", as: Int.self) == 1)
        let delivery = try #require(try await store.forwarding.claim(partner: "r", limit: 5, now: Date()).first)
        let sent = try #require(try JSONParser.parse(delivery.body).object)
        #expect(sent.members.map(\.key) == ["cid", "ts"] && sent["ts"]?.string != nil)
        // Replaced, the template applies to the next delivery; removed once no rule names it.
        try await store.deliveryTemplates.set(file: Self.file(#"{"template": "mine", "source": "countersign", "apple_fields": false, "fields": {"id": "dedup_key"}}"#))
        let again = try #require(try await store.forwarding.testDelivery(rule: "r"))
        #expect(try JSONParser.parse(again.body).object?.members.map(\.key) == ["id", "countersign-test"])
        try await store.forwarding.set(ForwardRule(name: "r", url: "http://127.0.0.1:1/r"))
        #expect(try await store.deliveryTemplates.remove("mine"))
        #expect(try await store.deliveryTemplates.remove("mine") == false)
    }

    @Test(arguments: TestEngine.allCases) func aPartnersSecretIsKeptApartAndNeverShown(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        let secret = "Bearer s3cret-partner-token"
        try await store.forwarding.set(ForwardRule(name: "p", url: "http://127.0.0.1:1/p"), header: .set(try PartnerHeader(name: "Authorization", value: secret)))
        let shown = try #require(try await store.forwarding.rules().first)
        #expect(shown.header == "Authorization")
        #expect(!JSONValue.object(shown.json).serialized.contains("s3cret"))
        let header = try PartnerHeader(name: "Authorization", value: secret)
        var dumped = ""
        dump(header, to: &dumped)
        #expect(!String(describing: header).contains("s3cret") && !dumped.contains("s3cret") && !String(reflecting: header).contains("s3cret"))
        // Kept when the rule is set again without a change (on the same host), replaced, then removed with its secret.
        try await store.forwarding.set(ForwardRule(name: "p", url: "http://127.0.0.1:1/other"))
        await #expect(throws: ForwardingOutbox.Refusal.secretNeedsHeader) {
            try await store.forwarding.set(ForwardRule(name: "p", url: "http://partner.example/p"))
        }
        #expect(try await store.column("SELECT value FROM forward_secrets", as: String.self) == [secret])
        try await store.forwarding.set(ForwardRule(name: "p", url: "http://127.0.0.1:1/p"), header: .set(try PartnerHeader(name: "Authorization", value: "Bearer new")))
        #expect(try await store.column("SELECT value FROM forward_secrets", as: String.self) == ["Bearer new"])
        try await store.forwarding.set(ForwardRule(name: "p", url: "http://127.0.0.1:1/p"), header: .remove)
        #expect(try await store.forwarding.rules().first?.header == nil)
        #expect(try await store.scalar("SELECT count(*) FROM forward_secrets", as: Int.self) == 0)
        try await store.forwarding.set(ForwardRule(name: "p", url: "http://127.0.0.1:1/p"), header: .set(try PartnerHeader(name: "X-Token", value: "t")))
        #expect(try await store.forwarding.remove("p", dropEntries: false) == 0)
        #expect(try await store.scalar("SELECT count(*) FROM forward_secrets", as: Int.self) == 0, "the secret goes with its rule")
        // Headers Countersign sets, names that are not tokens, and values that could split a request are refused, and
        // the refusal never repeats the value.
        for (name, value) in [("Content-Type", "tok-refused-1"), ("Idempotency-Key", "tok-refused-2"), ("Bad Header", "tok-refused-3"), ("", "tok-refused-4"),
                              ("X-Token", "line\r\nInjected: 1"), ("X-Token", "")] {
            #expect(throws: PartnerHeader.Problem.self) { try PartnerHeader(name: name, value: value) }
            do { _ = try PartnerHeader(name: name, value: value) } catch { #expect(value.isEmpty || !error.description.contains(value)) }
        }
    }
}
