import Foundation
import PostbackMint
import Testing
@testable import AppSetup

/// Each Info.plist mistake the field makes is a fixture with its finding, at its key path.
@Suite struct SetupCheckTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let registered = InfoPlistCheck.Expectations(copyDomain: "example.com", adNetworks: ["cstr6suwn9.skadnetwork"])

    static func findings(_ name: String, expecting: InfoPlistCheck.Expectations = registered) throws -> [String] {
        let contents = try SetupFile.read(Array(Data(contentsOf: fixtures.appendingPathComponent(name)))).get()
        return (contents.findings + (contents.root.map { InfoPlistCheck.check($0, prefix: contents.prefix, expecting: expecting) } ?? [])).map(\.description)
    }

    @Test(arguments: ["good.plist", "good-binary.plist"])
    func aRightSetUpHasNoFinding(name: String) throws {
        #expect(try Self.findings(name) == [])
    }

    @Test(arguments: [
        ("misspelled-keys.plist", ["error: SkAdNetworkItems: wrong case: Apple reads the key SKAdNetworkItems exactly",
                                   "error: AttributionCopyEndpiont: looks like a misspelling of AttributionCopyEndpoint",
                                   "warning: AttributionCopyEndpoint: is missing: no developer copies of AdAttributionKit postbacks",
                                   "warning: SKAdNetworkItems: does not list cstr6suwn9.skadnetwork"]),
        ("malformed-items.plist", ["error: SKAdNetworkItems[0].cstr6suwn9.skadnetwork: uses the identifier as the key; write the key SKAdNetworkIdentifier with the string cstr6suwn9.skadnetwork",
                                   "error: SKAdNetworkItems[1]: must be a dictionary with SKAdNetworkIdentifier, not a string; put the identifier under the key SKAdNetworkIdentifier",
                                   "error: SKAdNetworkItems[2].SKAdNetworkIdentifer: looks like a misspelling of SKAdNetworkIdentifier",
                                   "warning: SKAdNetworkItems: does not list cstr6suwn9.skadnetwork"]),
        ("identifiers.plist", ["error: SKAdNetworkItems[0].SKAdNetworkIdentifier: \"CSTR6SUWN9.skadnetwork\" must be lower case or Apple does not recognise it; write cstr6suwn9.skadnetwork",
                               "warning: SKAdNetworkItems[1].SKAdNetworkIdentifier: repeats cstr6suwn9.skadnetwork (first at SKAdNetworkItems[0].SKAdNetworkIdentifier)",
                               "error: SKAdNetworkItems[2].SKAdNetworkIdentifier: \"not an id\" holds spaces"]),
        ("endpoints.plist", ["error: NSAdvertisingAttributionReportEndpoint: points at other.org, but this app's copies are registered for example.com",
                             "warning: AttributionCopyEndpoint: \"https://copies.example.com/path\": Apple keeps only the domain and drops \"/path\"",
                             "warning: AttributionCopyEndpoint: copies.example.com: Apple keeps only the registrable domain, so AdAttributionKit copies go to example.com"]),
        ("types.plist", ["error: EligibleForAdAttributionKitReengagementPostbackCopies: must be a Boolean (<true/> in the plist, true in JSON), not a string",
                         "warning: NSAdvertisingAttributionReportEndpoint: is missing: no developer copies of SKAdNetwork postbacks will arrive"]),
        ("configuration.plist", ["error: AdAttributionKitConfigurations.AttributionWindow: looks like a misspelling of AttributionWindows",
                                 "error: AdAttributionKitConfigurations.AttributionWindows.global.install.click: 31 is outside Apple's range of 1-30 days",
                                 "error: AdAttributionKitConfigurations.AttributionWindows.global.install.view: 0 is outside Apple's range of 1-7 days",
                                 "error: AdAttributionKitConfigurations.AttributionWindows.global: ignoreInteractionType applies to one ad network only",
                                 "error: AdAttributionKitConfigurations.AttributionWindows.Example123.adattributionkit: must be lower case",
                                 "error: AdAttributionKitConfigurations.AttributionWindows.example123.adattributionkit.ignoreInteractionType: must be the string click or view",
                                 "error: AdAttributionKitConfigurations.AttributionCooldown.install-cooldown-hours: 721 is outside Apple's range of 0-720 hours",
                                 "error: AdAttributionKitConfigurations.AttributionCooldown.reengagement-cooldown-hours: looks like a misspelling of re-engagement-cooldown-hours"]),
        ("app.json", ["error: expo.ios.infoPlist.AttributionCopyEndpoint: \"http://example.com\" must start with https://"]),
        ("app-without-infoplist.json", ["error: expo.ios.infoPlist: is missing: Expo writes no attribution keys into Info.plist"]),
    ])
    func eachMistakeIsNamedAtItsKeyPath(name: String, expected: [String]) throws {
        let findings = try Self.findings(name)
        for message in expected { #expect(findings.contains { $0.hasPrefix(message) }, "\(name) lacks \(message); has \(findings)") }
        #expect(findings.count == expected.count, "\(name): \(findings)")
    }

    @Test func nestedAdAttributionKitKeysAreReadAsXcodeMayWriteThem() throws {
        #expect(try Self.findings("nested.plist") == [])
    }

    @Test func anAcceptedNetworkMissingFromTheListsIsAWarning() throws {
        let findings = try Self.findings("good.plist", expecting: InfoPlistCheck.Expectations(copyDomain: "example.com", adNetworks: ["su67r6k2v3.skadnetwork"]))
        #expect(findings == ["warning: SKAdNetworkItems: does not list su67r6k2v3.skadnetwork, an ad network this app accepts: its ads cannot be attributed in this app"])
    }

    @Test(arguments: [("not-a-plist.txt", "is not an XML or binary property list"), ("truncated.json", "is not valid JSON")])
    func aFileThatIsNeitherIsRefusedWithWhatItIsNot(name: String, message: String) throws {
        let bytes: [UInt8] = name == "truncated.json" ? Array("{ \"expo\": { \"ios\": ".utf8) : Array(try Data(contentsOf: Self.fixtures.appendingPathComponent(name)))
        guard case .failure(let unreadable) = SetupFile.read(bytes) else {
            Issue.record("\(name) was read")
            return
        }
        #expect(unreadable.message.hasPrefix(message), "\(unreadable)")
    }

    @Test func aPlistNestedDeeperThanAnInfoPlistIsRefused() {
        let deep = String(repeating: "<array>", count: 40) + String(repeating: "</array>", count: 40)
        let text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\">\(deep)</plist>"
        guard case .failure(let unreadable) = SetupFile.read(Array(text.utf8)) else {
            Issue.record("a 40-deep plist was read")
            return
        }
        #expect(unreadable.message.contains("nests deeper than 32"))
    }

    @Test func anyBytesGetAnAnswerNotACrash() {
        var generator = SeededGenerator(seed: 48)
        let good = Array((try? Data(contentsOf: Self.fixtures.appendingPathComponent("good-binary.plist"))) ?? Data())
        #expect(!good.isEmpty, "the binary fixture is read, so the mutations start from a real plist")
        for _ in 0..<300 {
            var bytes = good
            for _ in 0..<4 where !bytes.isEmpty { bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            if case .success(let contents) = SetupFile.read(bytes), let root = contents.root { _ = InfoPlistCheck.check(root, prefix: contents.prefix) }
        }
    }
}
