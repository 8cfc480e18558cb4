import Foundation
import Testing
import JWS
@testable import Postback

/// Apple's published examples, loaded from the fixture copy of shared/vectors/apple.
enum AppleExamples {
    struct Vector {
        let id: String
        let body: [UInt8]
        let object: JSONObject
        let keyID: String
    }

    static let document: JSONObject = {
        let url = Bundle.module.url(forResource: "apple-examples", withExtension: "json", subdirectory: "Fixtures")!
        return try! JSONParser.parse(Array(try! Data(contentsOf: url))).object!
    }()

    /// Every postback vector that Apple's keys verify.
    static let verifying: [Vector] = {
        guard case .array(let vectors) = document["vectors"]! else { return [] }
        return vectors.compactMap { value in
            guard let vector = value.object, vector["verifies"] == .bool(true), let postback = vector["postback"]?.object else { return nil }
            return Vector(id: vector["id"]!.string!, body: Array(JSONValue.object(postback).serialized.utf8), object: postback, keyID: vector["key_id"]!.string!)
        }
    }()

    /// The ring built from the fixture's own keys (the same keys as keys/).
    static let ring: KeyRing = {
        let keys = document["keys"]!.object!
        var entries: [KeyEntry] = []
        for member in keys.members where member.key != "note" {
            let der = Base64.decode(Array(member.value.object!["base64_der_spki"]!.string!.utf8), alphabet: .standard)!
            let usages: Set<KeyUsage> = member.key.hasPrefix("skan") ? [.skan] : [.aak]
            entries.append(KeyEntry(keyID: member.key, key: try! ECPublicKey(derSPKI: der),
                                    environment: member.key.contains("development") ? .development : .production, usages: usages, origin: "fixture"))
        }
        return try! KeyRing(entries)
    }()
}

@Suite struct AppleExamplesTests {
    let verifier = PostbackVerifier(keyRing: AppleExamples.ring)

    @Test func thereAreFiveVerifyingExamples() {
        #expect(AppleExamples.verifying.map(\.id) == ["aak-dev1-reengagement-fine", "skan-4.0-web-high-tier", "skan-3.0-winning", "skan-2.2", "hist-skan-2.0-b"])
    }

    @Test(arguments: AppleExamples.verifying.map(\.id))
    func verifiesWithTheNamedKey(id: String) throws {
        let vector = try #require(AppleExamples.verifying.first { $0.id == id })
        guard case .verified(let postback, let signer) = verifier.verify(vector.body) else {
            Issue.record("\(id) did not verify: \(verifier.verify(vector.body))")
            return
        }
        #expect(signer.keyID == vector.keyID)
        #expect(postback.postbackID.count == 36)
    }

    @Test(arguments: AppleExamples.verifying.map(\.id))
    func anyChangedByteInTheSignedPartFails(id: String) throws {
        let vector = try #require(AppleExamples.verifying.first { $0.id == id })
        var tried = 0
        if let jws = vector.object["jws-string"]?.string {
            let bytes = Array(jws.utf8)
            let signedEnd = bytes.lastIndex(of: UInt8(ascii: "."))!
            for index in 0..<signedEnd where bytes[index] != UInt8(ascii: ".") {
                var changed = bytes
                changed[index] = changed[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                var object = vector.object
                object.set("jws-string", .string(String(decoding: changed, as: UTF8.self)))
                #expect(verifier.verify(object: object).outcome != .verified, "byte \(index)")
                tried += 1
            }
        } else {
            let signed = try #require(try? PostbackVerifier.skanSignedString(vector.object).get())
            #expect(verifier.verify(vector.body).outcome == .verified)
            for member in vector.object.members where member.key != "attribution-signature" {
                let variants: [JSONValue]
                switch member.value {
                case .string(let text):
                    variants = text.indices.map { index in
                        var characters = Array(text)
                        characters[text.distance(from: text.startIndex, to: index)] = characters[text.distance(from: text.startIndex, to: index)] == "x" ? "y" : "x"
                        return .string(String(characters))
                    }
                case .number(let literal): variants = [.number(literal == "1" ? "0" : "1"), .number(String(Int64(literal)! + 10))]
                case .bool(let flag): variants = [.bool(!flag)]
                default: variants = []
                }
                let isSigned = String(decoding: signed, as: UTF8.self).contains(member.value.string ?? member.value.serialized)
                for variant in variants {
                    var object = vector.object
                    object.set(member.key, variant)
                    let result = verifier.verify(object: object)
                    let outcome = result.outcome
                    if ["conversion-value", "coarse-conversion-value", "country-code"].contains(member.key) {
                        // Outside the signature: a change keeps the signature good; only the field's own shape can refuse it.
                        if let value = variant.int64, (0...63).contains(value) {
                            #expect(outcome == .verified, "\(member.key) = \(variant.serialized)")
                        } else {
                            #expect(outcome == .verified || result.problem?.reason == .fieldOutOfRange, "\(member.key) = \(variant.serialized)")
                        }
                    } else if isSigned {
                        #expect(outcome != .verified, "\(member.key) = \(variant.serialized)")
                        tried += 1
                    }
                }
            }
        }
        #expect(tried > 10)
    }

    @Test func skanSignedStringMatchesApplesReference() throws {
        let vector = try #require(AppleExamples.verifying.first { $0.id == "skan-4.0-web-high-tier" })
        let signed = try PostbackVerifier.skanSignedString(vector.object).get()
        #expect(String(decoding: signed, as: UTF8.self) == "4.0\u{2063}com.example\u{2063}5239\u{2063}525463029\u{2063}6aafb7a5-0170-41b5-bbe4-fe71dedf1e30\u{2063}false\u{2063}example.com\u{2063}1\u{2063}true\u{2063}0")
    }

    @Test func decodesTheAAKExample() throws {
        let vector = try #require(AppleExamples.verifying.first { $0.id == "aak-dev1-reengagement-fine" })
        let postback = try #require(verifier.verify(vector.body).postback)
        #expect(postback.family == .aak)
        #expect(postback.conversionType.kind == .reEngagement)
        #expect(postback.conversionValue == 24)
        #expect(postback.adInteractionType?.kind == .click)
        #expect(postback.countryCode == "US")
        #expect(postback.sourceIdentifier == "1234")
        #expect(postback.advertisedItemID == 10738027756)
        #expect(postback.publisherItemID == 0)
        #expect(postback.tier == CrowdTier(minimum: 3, maximum: 3))
        #expect(Set(postback.unsignedFields.members.map(\.key)) == ["conversion-value", "ad-interaction-type", "country-code"])
        #expect(postback.dedupKey == "aak:85546EB7-FD39-44BC-8990-C98A4AC36A49")
    }

    @Test func developmentKeyIsVerifiedButRefusedUnlessAllowed() throws {
        let vector = try #require(AppleExamples.verifying.first { $0.id == "aak-dev1-reengagement-fine" })
        let result = verifier.verify(vector.body)
        guard case .refuse(let problem) = TrustPolicy(allowDevelopment: false).decide(result) else { Issue.record("accepted"); return }
        #expect(problem.reason == .developmentNotAllowed)
        #expect(TrustPolicy(allowDevelopment: true).decide(result) == .accept(countable: false))
    }

    /// The app registry's rules on top of the server's (issue 15, item 2): an app may allow its development postbacks
    /// and limit its ad networks; with a registry, an app outside it, or an ad network its entry leaves out, is kept and
    /// not counted (issue 25: never refused, so a registry change can count it later).
    @Test func appRulesApplyOnTopOfTheServersPolicy() throws {
        let vector = try #require(AppleExamples.verifying.first { $0.id == "aak-dev1-reengagement-fine" })
        let result = verifier.verify(vector.body)
        let app = AppID(try #require(result.postback?.advertisedItemID))
        let allowing = TrustPolicy(allowDevelopment: false, apps: [app: .init(allowDevelopment: true)])
        #expect(allowing.decide(result) == .accept(countable: false))
        let otherApp = TrustPolicy(allowDevelopment: false, apps: [AppID(app.number + 1): .init(allowDevelopment: true)])
        guard case .refuse(let refusal) = otherApp.decide(result) else { Issue.record("accepted"); return }
        #expect(refusal.reason == .developmentNotAllowed)
        let limited = TrustPolicy(allowDevelopment: true, apps: [app: .init(acceptedAdNetworks: ["someone.else"])])
        #expect(limited.decide(result) == .accept(countable: false))
        let production = try #require(AppleExamples.verifying.first { $0.id == "skan-4.0-web-high-tier" })
        let counted = verifier.verify(production.body)
        #expect(TrustPolicy(apps: nil).decide(counted) == .accept(countable: true))
        #expect(TrustPolicy(apps: [1: .init()]).decide(counted) == .accept(countable: false, reason: .appNotRegistered))
        let registered = AppID(try #require(counted.postback?.advertisedItemID))
        #expect(TrustPolicy(apps: [registered: .init()]).decide(counted) == .accept(countable: true))
        #expect(TrustPolicy(apps: [registered: .init(acceptedAdNetworks: ["someone.else"])]).decide(counted)
                == .accept(countable: false, reason: .adNetworkNotAccepted))
        // The server's own list still refuses.
        guard case .refuse(let network) = TrustPolicy(acceptedAdNetworks: ["someone.else"]).decide(counted) else { Issue.record("accepted"); return }
        #expect(network.reason == .adNetworkNotAccepted)
    }
}
