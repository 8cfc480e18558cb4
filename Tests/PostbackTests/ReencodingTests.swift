import Foundation
import Testing
import JWS
import PostbackMint
@testable import Postback

/// One Apple signature must never verify as a second postback (issue 11, finding 1).
@Suite struct ReencodingTests {
    static let separator = "\u{2063}"

    /// Apple's 2.0 example, re-encoded as 1.0 by moving `2.0⁣` into `ad-network-id` and the tail into `transaction-id`.
    @Test func appleSKAN2ExampleDoesNotVerifyAs1_0() throws {
        let genuine = try #require(AppleExamples.verifying.first { $0.id == "hist-skan-2.0-b" })
        let verifier = PostbackVerifier(keyRing: AppleExamples.ring)
        guard case .verified = verifier.verify(genuine.body) else { Issue.record("the genuine 2.0 example must verify"); return }
        let g = genuine.object
        var forged = JSONObject()
        forged.set("ad-network-id", .string("2.0" + Self.separator + g["ad-network-id"]!.string!))
        forged.set("campaign-id", g["campaign-id"]!)
        forged.set("app-id", g["app-id"]!)
        forged.set("transaction-id", .string(g["transaction-id"]!.string! + Self.separator + "true" + Self.separator + g["source-app-id"]!.serialized))
        forged.set("attribution-signature", g["attribution-signature"]!)
        forged.set("conversion-value", .number("63"))
        // The bytes are Apple's: the forgery would verify if shapes were not checked.
        #expect(try PostbackVerifier.skanSignedString(genuine.object).get() == Self.composed(forged, version: .v1_0))
        let result = verifier.verify(object: forged)
        #expect(result.outcome == .invalid)
        #expect(result.problem?.reason == .fieldOutOfRange)
    }

    /// A 4.0 `source-app-id` moved to `source-domain` writes the same digits into the same slot.
    @Test func sourceAppIDMovedToSourceDomainDoesNotVerify() throws {
        let key = try ECPrivateKey.generate()
        let ring = try KeyRing([KeyEntry(keyID: "k", key: key.publicKey, environment: .production, usages: [.skan], origin: "test")])
        var fields = SKANPostbackFields(transactionID: UUID().uuidString.lowercased())
        fields.sourceAppID = 1_234_567_891
        var object = try JSONParser.parse(try Mint.skan(fields, key: key)).object!
        #expect(PostbackVerifier(keyRing: ring).verify(object: object).outcome == .verified)
        object.members.removeAll { $0.key == "source-app-id" }
        object.set("source-domain", .string("1234567891"))
        #expect(PostbackVerifier(keyRing: ring).verify(object: object).problem?.reason == .fieldOutOfRange)
    }

    /// The signed string for `object` as `version` lays it out, bypassing every shape check: what a verifier without
    /// them would have checked the signature over.
    static func composed(_ object: JSONObject, version: SKANVersion) -> [UInt8] {
        var parts: [String] = []
        for slot in version.signedOrder {
            let names: [String]
            switch slot {
            case .field(let name): names = [name]
            case .optional(let options): names = options
            }
            guard let value = names.lazy.compactMap({ object[$0] }).first else { continue }
            switch value {
            case .string(let text): parts.append(text)
            case .bool(let flag): parts.append(flag ? "true" : "false")
            default: parts.append(value.serialized)
            }
        }
        return Array(parts.joined(separator: separator).utf8)
    }

    /// Every field layout of every version: the slot's alternatives spelled out (absent, or one of its fields).
    static func layouts(_ version: SKANVersion) -> [[String]] {
        var layouts: [[String]] = [[]]
        for slot in version.signedOrder {
            switch slot {
            case .field(let name): layouts = layouts.map { $0 + [name] }
            case .optional(let options): layouts = layouts.flatMap { layout in [layout] + options.map { layout + [$0] } }
            }
        }
        return layouts
    }

    /// Ways to cut `parts` into `count` consecutive non-empty groups (a field may swallow separators).
    static func groupings(_ parts: [String], into count: Int) -> [[String]] {
        guard count > 0, parts.count >= count else { return [] }
        if count == 1 { return [[parts.joined(separator: separator)]] }
        return (1...(parts.count - count + 1)).flatMap { take in
            groupings(Array(parts.dropFirst(take)), into: count - 1).map { [parts.prefix(take).joined(separator: separator)] + $0 }
        }
    }

    static let integerFields: Set<String> = ["campaign-id", "app-id", "source-app-id", "fidelity-type", "postback-sequence-index"]

    /// A JSON value for `field` holding `text` as Apple would write it, or nil when the text cannot be that type.
    static func value(_ field: String, _ text: String) -> JSONValue? {
        if SKANPostback.booleanFields.contains(field) { return text == "true" ? .bool(true) : text == "false" ? .bool(false) : nil }
        if integerFields.contains(field) {
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), Int64(text) != nil else { return nil }
            return .number(text)
        }
        return .string(text)
    }

    /// A random genuine postback of `version`, as Apple could send it.
    static func randomFields(_ version: SKANVersion, _ random: inout some RandomNumberGenerator) -> SKANPostbackFields {
        var fields = SKANPostbackFields(transactionID: UUID().uuidString.lowercased())
        fields.version = version
        fields.adNetworkID = ["example123.skadnetwork", "com.apple.ads", "a1b2c3.skadnetwork"].randomElement(using: &random)!
        fields.campaignID = Int64.random(in: 0...100, using: &random)
        fields.sourceIdentifier = String(Int.random(in: 10...9999, using: &random))
        fields.appID = Int64.random(in: 0...9_999_999_999, using: &random)
        fields.redownload = Bool.random(using: &random)
        fields.fidelityType = Int.random(in: 0...1, using: &random)
        fields.didWin = Bool.random(using: &random)
        fields.postbackSequenceIndex = Int.random(in: 0...2, using: &random)
        switch Int.random(in: 0...2, using: &random) {
        case 1: fields.sourceAppID = Int64.random(in: 0...9_999_999_999, using: &random)
        case 2 where version == .v4_0: fields.sourceDomain = ["example.com", "ads.example.org", "x9.io"].randomElement(using: &random)!
        default: break
        }
        return fields
    }

    /// For random genuine postbacks of every version, no other version, layout or cut of the same signed bytes verifies.
    @Test(arguments: SKANVersion.allCases)
    func noReencodingVerifies(version: SKANVersion) throws {
        let p192 = try ECPrivateKey.generate(curve: .p192)
        let p256 = try ECPrivateKey.generate()
        let ring = try KeyRing([
            KeyEntry(keyID: "p192", key: p192.publicKey, environment: .production, usages: [.skan], origin: "test"),
            KeyEntry(keyID: "p256", key: p256.publicKey, environment: .production, usages: [.skan], origin: "test"),
        ])
        let verifier = PostbackVerifier(keyRing: ring)
        var random = SystemRandomNumberGenerator()
        var tried = 0
        for _ in 0..<40 {
            let fields = Self.randomFields(version, &random)
            let original = fields.object
            let signedBytes: [UInt8]
            switch PostbackVerifier.skanSignedString(original) {
            case .success(let bytes): signedBytes = bytes
            case .failure(let problem): Issue.record("a genuine postback must compose: \(problem)"); continue
            }
            let signature = try (version.curve == .p192 ? p192 : p256).signDER(message: signedBytes)
            let signatureText = JSONValue.string(Base64.encode(signature, alphabet: .standard))
            var genuine = original
            genuine.set("attribution-signature", signatureText)
            #expect(verifier.verify(object: genuine).outcome == .verified)
            let parts = String(decoding: signedBytes, as: UTF8.self).components(separatedBy: Self.separator)
            let originalFields = try SKANPostback.signedString(original, version: version).fields
            for target in SKANVersion.allCases where target.curve == version.curve {
                for layout in Self.layouts(target) {
                    for grouping in Self.groupings(parts, into: layout.count) {
                        var forged = JSONObject()
                        var representable = true
                        for (field, text) in zip(layout, grouping) {
                            guard let value = Self.value(field, text) else { representable = false; break }
                            forged.set(field, value)
                        }
                        guard representable else { continue }
                        if target == .v1_0 { forged.members.removeAll { $0.key == "version" } }
                        // The genuine postback itself is not a re-encoding.
                        if target == version, layout == originalFields, layout.allSatisfy({ forged[$0] == original[$0] }) { continue }
                        forged.set("attribution-signature", signatureText)
                        // Without shape checks these bytes are exactly what Apple signed.
                        #expect(Self.composed(forged, version: target) == signedBytes)
                        tried += 1
                        let result = verifier.verify(object: forged)
                        #expect(result.outcome != .verified, "\(version) re-encoded as \(target) \(layout) verified: \(forged.serialized)")
                    }
                }
            }
        }
        // A 1.0 string has the fewest fields of its curve, so it has nothing to be cut into.
        #expect(tried > 0 || version == .v1_0)
    }
}

extension JSONObject {
    var serialized: String { JSONValue.object(self).serialized }
}
