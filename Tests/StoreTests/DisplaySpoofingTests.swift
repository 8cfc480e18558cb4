import CountersignServer
import Foundation
import Testing
import Postback
import Spend
@testable import Store
import TestSupport

/// Security finding "Display spoofing": names and imported labels holding a bidi override (U+202E), a zero-width
/// character or a noncharacter could pass for other names in the dashboard, reports and exports. They are refused
/// wherever they enter, on both engines alike; names in any script and emoji stay accepted.
@Suite struct DisplaySpoofingTests {
    static let app: AppID = 1_108_187_390
    static let network = "example123.skadnetwork"

    @Test(arguments: TestEngine.allCases) func networkAndSourceNamesRefuseBidiAndZeroWidthCharacters(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        for disguised in ["Alpha\u{202E}sdA", "\u{200B}Alpha", "Alpha\u{2028}Media", "Alpha\u{10FFFF}", "Alpha\u{200D}Media"] {
            let network = await #expect(throws: NameRegistry.Problem.self) { try await store.names.setAdNetwork(Self.network, name: disguised) }
            #expect(network?.field == "name")
            #expect(network?.message.contains("format (bidi, zero-width)") == true, "\(String(describing: network))")
            await #expect(throws: NameRegistry.Problem.self) {
                try await store.names.setSourceName(app: Self.app, adNetwork: Self.network, level: .campaign, digits: "12", name: disguised)
            }
        }
        #expect(try await store.names.adNetworks().isEmpty)
        #expect(try await store.names.sourceNames(app: Self.app).isEmpty)
        // Plain names in any script, and emoji, are stored as given.
        try await store.names.setAdNetwork(Self.network, name: "Café 🎮")
        try await store.names.setSourceName(app: Self.app, adNetwork: Self.network, level: .campaign, digits: "12", name: "東京 summer")
        #expect(try await store.names.adNetworks().map(\.name) == ["Café 🎮"])
        #expect(try await store.names.sourceNames(app: Self.app).map(\.name) == ["東京 summer"])
    }

    @Test(arguments: TestEngine.allCases) func appNamesRefuseBidiAndZeroWidthCharacters(engine: TestEngine) async throws {
        let store = try engine.freshStore()
        for disguised in ["Merge\u{202E}Kingdom", "Merge\u{00AD}Kingdom", "\u{FEFF}Merge Kingdom", "Merge Kingdom" + String(Character(Unicode.Scalar(0xFDD0)!))] {
            let problem = await #expect(throws: AppRegistry.Problem.self) { try await store.apps.set(AppRegistry.Entry(app: Self.app, name: disguised)) }
            #expect(problem?.field == "name")
        }
        #expect(try await store.apps.list().isEmpty)
        try await store.apps.set(AppRegistry.Entry(app: Self.app, name: "Merge Kingdom 🎮"))
        #expect(try await store.apps.list().map(\.name) == ["Merge Kingdom 🎮"])
    }

    /// A spend file's campaign cell with a zero-width space is named with its line and column, like any bad cell.
    @Test func aSpendCampaignCellWithAZeroWidthSpaceIsRefused() throws {
        let header = "date,app,ad_network,campaign,country,impressions,clicks,installs,re_engagements,spend,currency\n"
        let bytes = Array((header + """
            2026-11-20,1108187390,example123.skadnetwork,10,US,1000,50,20,1,120.50,USD
            2026-11-20,1108187390,example123.skadnetwork,1\u{200B}1,US,1000,50,20,1,120.50,USD
            2026-11-20,1108187390,example123.skadnetwork,1\u{202E}2,US,1000,50,20,1,120.50,USD

            """).utf8)
        guard case .failure(let found) = SpendFile.read(bytes, format: .generic) else { Issue.record("accepted"); return }
        #expect(found.problems.map { "\($0.line):\($0.column ?? "-")" } == ["3:campaign", "4:campaign"])
        #expect(found.problems.first?.message.contains("format (bidi, zero-width)") == true, "\(found.problems)")
        let plain = Array((header + "2026-11-20,1108187390,example123.skadnetwork,Café 🎮,US,1000,50,20,1,120.50,USD\n").utf8)
        guard case .success(let rows) = SpendFile.read(plain, format: .generic) else { Issue.record("refused"); return }
        #expect(rows.map(\.campaign) == ["Café 🎮"])
    }

    /// The reports' `campaign` filter refuses what a campaign may not hold.
    @Test func theCampaignFilterRefusesBidiCharacters() throws {
        #expect(throws: QueryProblem.self) { try PerformanceQuery.parse([("campaign", "1\u{202E}0")]) }
        #expect(throws: QueryProblem.self) { try PerformanceQuery.parse([("campaign", "\u{200B}10")]) }
        #expect(try PerformanceQuery.parse([("campaign", "Café 🎮")]).campaign == "Café 🎮")
    }
}
