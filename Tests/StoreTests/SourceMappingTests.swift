import CountersignServer
import Foundation
import Spend
import Testing
import JWS
import Postback
import PostbackMint
@testable import Store
import TestSupport

/// Dated source-identifier names (issue 48, item 5): mapping files in the SKAN standard's layout, overlaps refused with
/// both lines named, and postbacks named by the mapping in force on their estimated install day, so two campaigns that
/// shared an identifier at different times are never merged; checked against an independent reading of the raw rows on
/// both engines.
@Suite struct SourceMappingTests {
    static let key = try! ECPrivateKey.generate()
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "net/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
    ]))
    static let network = "net-a.adattributionkit"
    static let app: AppID = 10738027756

    static let file = """
        Start Date,End Date,SKCampaignId,Country,Publisher ID,Campaign ID,Campaign Name,Ad Group ID,Creative ID
        2026-01-01,2026-01-31,12,,,C-100,Alpha,AG-1,
        2026-02-01,,12,,,C-200,Beta,,
        2026-01-01,,34,US,,C-300,Gamma US,,
        2026-01-01,,34,,,C-400,,,
        """

    func intake(_ id: String, source: String, country: String?, at day: String) throws -> Intake {
        var fields = AAKPostbackFields(postbackID: Mint.uuid(id))
        fields.adNetworkID = Self.network
        fields.sourceIdentifier = source
        fields.advertisedItemID = Self.app.number
        fields.countryCode = country
        let body = try Mint.aak(fields, key: Self.key, keyID: "net/0")
        let result = verifier.verify(body)
        return Intake(receivedAt: try #require(Timestamp.parse(day + "T12:00:00Z")), remoteAddress: nil, route: .any, body: body, result: result,
                      decision: TrustPolicy(allowDevelopment: false).decide(result))
    }

    @Test func aMappingFileIsReadAsTheStandardLaysItOutAndOverlapsAreRefused() throws {
        let mappings = try SourceMapping.parse(Array(Self.file.utf8))
        #expect(mappings.map(\.campaignID) == ["C-100", "C-200", "C-300", "C-400"])
        #expect(mappings[0].validTo == "2026-01-31" && mappings[1].validTo == nil && mappings[2].country == "US" && mappings[0].adGroupID == "AG-1")
        // The same identifier, country and publisher twice on one day: both lines are named.
        let overlapping = Self.file + "\n2026-01-15,,12,,,C-999,Late,,\n"
        #expect(throws: SourceMapping.Problem.self) { try SourceMapping.parse(Array(overlapping.utf8)) }
        do {
            _ = try SourceMapping.parse(Array(overlapping.utf8))
        } catch {
            #expect(error.line == 6 && error.message.contains("line 2") && error.message.contains("C-100") && error.message.contains("C-999"))
        }
        let cased = try SourceMapping.parse(Array("Start Date,SKCampaignId,Campaign ID,Publisher ID,\n2026-01-01,12,C,Example.COM,\n".utf8))
        #expect(cased.first?.publisher == "example.com", "domains compared in lower case; an empty trailing header cell is ignored")
        for (text, fragment) in [("Start Date,Campaign ID\n2026-01-01,C\n", "SKCampaignId"),
                                 ("Start Date,SKCampaignId,Source Identifier,Campaign ID\n", "appears twice"), ("Start Date,SKCampaignId,Campaign ID,Colour\n", "unknown column"),
                                 ("Start Date,SKCampaignId,Campaign ID\n2026-02-30,12,C\n", "Start Date"), ("Start Date,SKCampaignId,Campaign ID\n2026-01-01,12345,C\n", "1 to 4 digits"),
                                 ("Start Date,End Date,SKCampaignId,Campaign ID\n2026-02-01,2026-01-01,12,C\n", "before Start Date")] {
            #expect(throws: SourceMapping.Problem.self, "\(fragment)") { try SourceMapping.parse(Array(text.utf8)) }
        }
    }

    @Test(arguments: TestEngine.allCases) func postbacksAreNamedByTheMappingInForceAndNeverMerged(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        try await store.names.setMappings(app: Self.app, adNetwork: Self.network, try SourceMapping.parse(Array(Self.file.utf8)))
        let sent = [("M-1", "1234", nil, "2026-01-20"), ("M-2", "1255", nil, "2026-02-20"), ("M-3", "3400", "US", "2026-02-10"),
                    ("M-4", "3411", "DE", "2026-02-10"), ("M-5", "5600", nil, "2026-02-20"), ("M-6", "1299", nil, "2026-02-02")]
        #expect(try store.ledger.persist(try sent.map { try intake($0.0, source: $0.1, country: $0.2, at: $0.3) }) == Array(repeating: .stored, count: sent.count))
        // Independently: each raw row's name, by the rule docs/operations.md states, in Swift.
        let mappings = try await store.names.mappings(app: Self.app, adNetwork: Self.network).map(\.mapping)
        var expected: [String: Int] = [:]
        for row in try await store.rows("SELECT source_identifier, country_code_unsigned, estimated_install_at FROM conversions", []) {
            let source = try row.get("source_identifier", as: String.self)
            let country = try row.get("country_code_unsigned", as: String?.self)
            let day = String(try row.get("estimated_install_at", as: String.self).prefix(10))
            let candidates = mappings.filter { mapping in
                (mapping.sourceIdentifier == source || (mapping.sourceIdentifier.count >= 2 && source.hasPrefix(mapping.sourceIdentifier)))
                    && mapping.validFrom <= day && (mapping.validTo ?? "9999") >= day && (mapping.country == nil || mapping.country == country)
            }.sorted { ($0.sourceIdentifier.count, $0.country != nil ? 1 : 0) > ($1.sourceIdentifier.count, $1.country != nil ? 1 : 0) }
            let name = candidates.first.map { $0.campaignName ?? $0.campaignID } ?? String(source.prefix(2))
            expected[name, default: 0] += 1
        }
        // Identifier 12 meant two campaigns at different times, and 34 one in the US and another elsewhere: both stay apart.
        #expect(expected["Alpha"] != nil && expected["Beta"] != nil && expected["Gamma US"] != nil && expected["C-400"] != nil && expected["56"] == 1)
        let table = try await store.reports.report(try ReportQuery.parse([("by", "campaign_name"), ("from", "2026-01-01"), ("to", "2026-03-01")]))
        let name = try #require(table.columns.firstIndex(of: "campaign_name")), count = try #require(table.columns.firstIndex(of: "postbacks"))
        var reported: [String: Int] = [:]
        for row in table.rows { if case .string(let text) = row[name], case .number(let literal) = row[count] { reported[text] = Int(literal) } }
        #expect(reported == expected)
        // A pull names each postback the same way.
        let pull = try #require(await store.deliveryTemplates.named("pull"))
        let collected = PostbackPullTests.Collected()
        try await PullWriter.write(store.pull, try ReportQuery.parse([("app", String(Self.app))]), template: pull, format: .ndjson) { collected.append($0) }
        let names = String(decoding: collected.bytes, as: UTF8.self).split(separator: "\n").compactMap {
            (try? JSONParser.parse(Array($0.utf8)))?.object?["ad-network-campaign-name"]?.string
        }
        #expect(names.sorted() == expected.flatMap { Array(repeating: $0.key, count: $0.value) }.sorted())
        // Its ids are the network's, from the mapping, else the digits.
        let lines = String(decoding: collected.bytes, as: UTF8.self).split(separator: "\n").compactMap { (try? JSONParser.parse(Array($0.utf8)))?.object }
        for line in lines {
            let id = line["ad-network-campaign-id"]?.string ?? ""
            switch line["ad-network-campaign-name"]?.string {
            case "Alpha": #expect(id == "C-100" && line["ad-network-adgroup-id"] == .string("AG-1"))
            case "Beta": #expect(id == "C-200" && line["ad-network-adgroup-id"] == line["ad-network-adgroup-name"], "no ad group in the mapping: the digit")
            case "56": #expect(id == "56")
            default: #expect(["C-300", "C-400"].contains(id))
            }
        }
    }

    /// Performance groups campaigns by the network's own campaign id where a mapping names the postback, so a spend file
    /// that numbers campaigns the network's way meets the installs of each, and two campaigns that shared an identifier
    /// at different times keep their own spend, installs and eCPI.
    @Test(arguments: TestEngine.allCases) func performanceGroupsCampaignsByTheMappedIDs(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        try await store.names.setMappings(app: Self.app, adNetwork: Self.network, try SourceMapping.parse(Array(Self.file.utf8)))
        let sent = [("P-1", "1234", nil, "2026-01-20"), ("P-2", "1255", nil, "2026-02-20"), ("P-3", "1201", nil, "2026-02-21"), ("P-4", "3400", "US", "2026-02-10"),
                    ("P-5", "3411", "DE", "2026-02-10"), ("P-6", "5600", nil, "2026-02-20")]
        #expect(try store.ledger.persist(try sent.map { try intake($0.0, source: $0.1, country: $0.2, at: $0.3) }) == Array(repeating: .stored, count: sent.count))
        let spend = Array("""
            date,app,ad_network,campaign,spend,currency,installs
            2026-01-20,\(Self.app),\(Self.network),C-100,10.00,USD,1
            2026-02-20,\(Self.app),\(Self.network),C-200,30.00,USD,2
            2026-02-20,\(Self.app),\(Self.network),56,5.00,USD,1

            """.utf8)
        guard case .success(let rows) = SpendFile.read(spend, format: .generic) else { Issue.record("spend refused"); return }
        _ = try await store.spend.importSpend(rows, provenance: ImportProvenance(importedBy: "test", fileName: nil, format: "generic", bytes: spend))
        // Independently: each raw install row's campaign, the mapping's id by the documented rule, else its two digits.
        let mappings = try await store.names.mappings(app: Self.app, adNetwork: Self.network).map(\.mapping)
        var expected: [String: Int] = [:]
        let raw = try await store.rows("""
            SELECT source_identifier, country_code_unsigned, estimated_install_at FROM conversions
            WHERE countable = 1 AND did_win = 1 AND conversion_window = 0 AND conversion_class = 'install'
            """, [])
        for row in raw {
            let source = try row.get("source_identifier", as: String.self)
            let country = try row.get("country_code_unsigned", as: String?.self)
            let day = String(try row.get("estimated_install_at", as: String.self).prefix(10))
            let mapping = mappings.filter { mapping in
                (mapping.sourceIdentifier == source || (mapping.sourceIdentifier.count >= 2 && source.hasPrefix(mapping.sourceIdentifier)))
                    && mapping.validFrom <= day && (mapping.validTo ?? "9999") >= day && (mapping.country == nil || mapping.country == country)
            }.max { ($0.sourceIdentifier.count, $0.country != nil ? 1 : 0) < ($1.sourceIdentifier.count, $1.country != nil ? 1 : 0) }
            expected[mapping?.campaignID ?? String(source.prefix(2)), default: 0] += 1
        }
        #expect(expected == ["C-100": 1, "C-200": 2, "C-300": 1, "C-400": 1, "56": 1])
        let table = try await store.performance.report(try PerformanceQuery.parse([("by", "campaign"), ("from", "2026-01-01"), ("to", "2026-03-01")]))
        let campaign = try #require(table.columns.firstIndex(of: "campaign")), installs = try #require(table.columns.firstIndex(of: "installs"))
        let spent = try #require(table.columns.firstIndex(of: "spend")), ecpi = try #require(table.columns.firstIndex(of: "ecpi"))
        var reported: [String: Int] = [:], spendBy: [String: String] = [:], ecpiBy: [String: String] = [:]
        for row in table.rows {
            guard case .string(let name) = row[campaign] else { continue }
            if case .number(let literal) = row[installs] { reported[name] = Int(literal) }
            if case .number(let literal) = row[spent] { spendBy[name] = literal }
            if case .number(let literal) = row[ecpi] { ecpiBy[name] = literal }
        }
        #expect(reported.filter { $0.value > 0 } == expected, "\(table.rows)")
        #expect(spendBy.mapValues { Decimal(string: $0) } == ["C-100": 10, "C-200": 30, "56": 5])
        #expect(ecpiBy.mapValues { Decimal(string: $0) } == ["C-100": 10, "C-200": 15, "56": 5])
        // The filter takes the same ids.
        let one = try await store.performance.report(try PerformanceQuery.parse([("campaign", "C-200"), ("from", "2026-01-01"), ("to", "2026-03-01")]))
        let oneInstalls = try #require(one.columns.firstIndex(of: "installs"))
        #expect(one.rows.count == 1 && one.rows.first?[oneInstalls] == .number("2"), "\(one.rows)")
    }

    /// A schema's `source-mappings` replace the dated mappings of the networks it names, in the upload's transaction:
    /// another network's list and a later revision without them are left alone, and overlaps refuse the whole upload.
    @Test(arguments: TestEngine.allCases) func aSchemaSetsTheMappingsOfTheNetworksItNames(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        let other = "other123.skadnetwork"
        try await store.names.setMappings(app: Self.app, adNetwork: other, try SourceMapping.parse(Array("Start Date,SKCampaignId,Campaign ID\n2026-01-01,7,O-7\n".utf8)))
        func schema(_ mappings: String) -> [UInt8] {
            Array(#"{"format": "countersign.conversion-schema/1", "app": "\#(Self.app)", "currency": "USD"\#(mappings), "versions": [{"version": 1, "effective-from": "2026-01-01T00:00:00Z", "install": {"windows": {"0": {"fine": {"values": [{"range": [0, 63], "events": [{"name": "open"}]}]}}}}}]}"#.utf8)
        }
        let twoCampaigns = #", "source-mappings": {"\#(Self.network)": [{"source-identifier": "12", "start-date": "2026-01-01", "end-date": "2026-01-31", "campaign-id": "C-100", "campaign-name": "Alpha", "ad-group-id": "AG-1"}, {"source-identifier": "12", "start-date": "2026-02-01", "campaign-id": "C-200", "campaign-name": "Beta"}, {"source-identifier": "34", "start-date": "2026-01-01", "campaign-id": "C-300", "publisher-id": "Example.COM"}]}"#
        guard case .stored = try await store.schemas.put(app: Self.app, document: schema(twoCampaigns)) else { Issue.record("refused"); return }
        let stored = try await store.names.mappings(app: Self.app, adNetwork: nil)
        #expect(stored.map { "\($0.adNetwork) \($0.mapping.campaignID) \($0.mapping.validFrom)-\($0.mapping.validTo ?? "")" }
            == ["\(Self.network) C-100 2026-01-01-2026-01-31", "\(Self.network) C-200 2026-02-01-", "\(Self.network) C-300 2026-01-01-", "\(other) O-7 2026-01-01-"])
        #expect(stored[0].mapping.adGroupID == "AG-1" && stored[2].mapping.publisher == "example.com")
        // Postbacks of the two periods are named apart.
        #expect(try store.ledger.persist([try intake("D-1", source: "1200", country: nil, at: "2026-01-20"),
                                          try intake("D-2", source: "1200", country: nil, at: "2026-02-20")]) == [.stored, .stored])
        let table = try await store.reports.report(try ReportQuery.parse([("by", "campaign_name"), ("from", "2026-01-01"), ("to", "2026-03-01")]))
        let name = try #require(table.columns.firstIndex(of: "campaign_name"))
        #expect(Set(table.rows.compactMap { $0[name].string }) == ["Alpha", "Beta"])
        // A revision without them leaves the mappings as they are.
        guard case .stored(revision: 2, _, _) = try await store.schemas.put(app: Self.app, document: schema("")) else { Issue.record("refused"); return }
        #expect(try await store.names.mappings(app: Self.app, adNetwork: nil).count == 4)
        // Overlapping mappings refuse the upload with the entry's path, and nothing changes.
        let overlapping = #", "source-mappings": {"\#(Self.network)": [{"source-identifier": "12", "start-date": "2026-01-01", "campaign-id": "C-1"}, {"source-identifier": "12", "start-date": "2026-03-01", "campaign-id": "C-2"}]}"#
        guard case .invalid(let problems) = try await store.schemas.put(app: Self.app, document: schema(overlapping)) else { Issue.record("stored"); return }
        #expect(problems.map(\.path) == ["$.source-mappings.\(Self.network)[1]"] && problems[0].message.contains("[0]") && problems[0].message.contains("C-2"), "\(problems)")
        #expect(try await store.schemas.revisions(app: Self.app).count == 2)
        #expect(try await store.names.mappings(app: Self.app, adNetwork: Self.network).map(\.mapping.campaignID) == ["C-100", "C-200", "C-300"])
        // Each entry is checked as a file's line is.
        for (entry, path) in [(#"{"source-identifier": "12345", "start-date": "2026-01-01", "campaign-id": "C"}"#, "[0]"),
                              (#"{"source-identifier": "12", "start-date": "2026-01-01"}"#, "[0]"),
                              (#"{"source-identifier": "12", "start-date": "2026-01-01", "campaign-id": "C", "colour": "red"}"#, "[0].colour")] {
            guard case .invalid(let problems) = try await store.schemas.put(app: Self.app, document: schema(#", "source-mappings": {"\#(Self.network)": [\#(entry)]}"#)) else {
                Issue.record("stored \(entry)"); continue
            }
            #expect(problems.map(\.path) == ["$.source-mappings.\(Self.network)\(path)"], "\(problems)")
        }
        guard case .invalid(let problems) = try await store.schemas.put(app: Self.app, document: schema(#", "source-mappings": {"Not A Network": []}"#)) else { Issue.record("stored"); return }
        #expect(problems.map(\.path) == ["$.source-mappings.Not A Network"])
    }

    /// SKAdNetwork's `campaign-id` before 4.0 is one number, never a prefix: a mapping of `12` names `1234` of 4.0, not
    /// campaign 120 of 3.0; and once a mapping names a postback, its ad group is the mapping's, never an undated name.
    @Test(arguments: TestEngine.allCases) func prefixesApplyToHierarchicalIdentifiersOnly(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        defer { store.close() }
        let network = "example123.skadnetwork"
        try await store.names.setMappings(app: Self.app, adNetwork: network, try SourceMapping.parse(Array("Start Date,SKCampaignId,Campaign ID,Campaign Name\n2000-01-01,12,C-12,Twelve\n".utf8)))
        try await store.names.setSourceName(app: Self.app, adNetwork: network, level: .adGroup, digits: "3", name: "Undated group")
        var intakes: [Intake] = []
        for (index, (version, campaign, source)) in [(SKANVersion.v3_0, Int64(120), "120"), (.v4_0, 0, "1234"), (.v3_0, 12, "12")].enumerated() {
            var fields = SKANPostbackFields(transactionID: Mint.uuid("S-\(index)"))
            fields.version = version
            fields.adNetworkID = network
            fields.appID = Self.app.number
            fields.campaignID = campaign
            fields.sourceIdentifier = source
            let body = try Mint.skan(fields, key: Self.key)
            let result = verifier.verify(body)
            intakes.append(Intake(receivedAt: Date(), remoteAddress: nil, route: .skan, body: body, result: result, decision: TrustPolicy().decide(result)))
        }
        #expect(try store.ledger.persist(intakes) == [.stored, .stored, .stored])
        let table = try await store.reports.report(try ReportQuery.parse([("by", "source_identifier,campaign_name,ad_group_name")]))
        let columns = ["source_identifier", "campaign_name", "ad_group_name"].compactMap { table.columns.firstIndex(of: $0) }
        let rows = Set(table.rows.map { row in columns.map { row[$0].string ?? "" } })
        #expect(rows == [["120", "12", ""], ["1234", "Twelve", "3"], ["12", "Twelve", ""]], "\(table.rows)")
    }
}
