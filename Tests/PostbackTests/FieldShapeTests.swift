import Testing
import JWS
import PostbackMint
@testable import Postback

/// Every signed field has the shape Apple documents; ids hold no control characters (issue 11, findings 1 and 8).
@Suite struct FieldShapeTests {
    static let key = try! ECPrivateKey.generate()
    static let p192 = try! ECPrivateKey.generate(curve: .p192)
    let verifier = PostbackVerifier(keyRing: try! KeyRing([
        KeyEntry(keyID: "test/0", key: key.publicKey, environment: .production, usages: [.aak, .skan], origin: "test"),
        KeyEntry(keyID: "test-p192", key: p192.publicKey, environment: .production, usages: [.skan], origin: "test"),
    ]))

    /// A genuinely signed 4.0 postback with one member changed after signing, or set before it.
    func skan(_ change: (inout JSONObject) -> Void, version: SKANVersion = .v4_0) throws -> JSONObject {
        var fields = SKANPostbackFields(transactionID: "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30")
        fields.version = version
        var object = try JSONParser.parse(try Mint.skan(fields, key: version.curve == .p192 ? Self.p192 : Self.key)).object!
        change(&object)
        return object
    }

    func reason(_ object: JSONObject) -> VerificationReason? { verifier.verify(object: object).problem?.reason }

    @Test func signedFieldsHaveTheirDocumentedShape() throws {
        #expect(reason(try skan { _ in }) == nil)
        #expect(reason(try skan { $0.set("transaction-id", .string("not-a-uuid")) }) == .fieldOutOfRange)
        #expect(reason(try skan { $0.set("transaction-id", .string("6aafb7a5-0170-41b5-bbe4-fe71dedf1e3\u{2063}")) }) == .fieldOutOfRange)
        #expect(reason(try skan { $0.set("ad-network-id", .string("Example123.skadnetwork")) }) == .fieldOutOfRange)
        #expect(reason(try skan { $0.set("ad-network-id", .string("4.0\u{2063}example123.skadnetwork")) }) == .fieldOutOfRange)
        #expect(reason(try skan { $0.set("ad-network-id", .string("")) }) == .fieldOutOfRange)
        #expect(reason(try skan { $0.set("source-domain", .string("123")) }) == .fieldOutOfRange)
        #expect(reason(try skan { $0.set("source-domain", .string("exa mple.com")) }) == .fieldOutOfRange)
        #expect(reason(try skan { $0.set("app-id", .number("-0")) }) == .fieldOutOfRange)
        #expect(reason(try skan { $0.set("app-id", .string("525463029")) }) == .wrongType)
        #expect(reason(try skan { $0.set("app-id", .number("525463029.0")) }) == .fieldOutOfRange)
        #expect(reason(try skan { $0.set("fidelity-type", .number("2")) }) == .fieldOutOfRange)
        #expect(reason(try skan({ $0.set("campaign-id", .number("-0")) }, version: .v3_0)) == .fieldOutOfRange)
        #expect(reason(try skan({ $0.set("ad-network-id", .string("2.0\u{2063}example123.skadnetwork")) }, version: .v1_0)) == .fieldOutOfRange)
    }

    @Test func aakIdentifiersHaveTheirShape() throws {
        func aak(_ change: (inout AAKPostbackFields) -> Void, keyID: String = "test/0") throws -> [UInt8] {
            var fields = AAKPostbackFields(postbackID: "0F3A5E4C-1B2D-4C3E-8F9A-0B1C2D3E4F5A")
            change(&fields)
            return try Mint.aak(fields, key: Self.key, keyID: keyID)
        }
        #expect(verifier.verify(try aak { _ in }).outcome == .verified)
        #expect(verifier.verify(try aak { $0.postbackID = "E1" }).problem?.reason == .fieldOutOfRange)
        #expect(verifier.verify(try aak { $0.adNetworkID = "Example.AdAttributionKit" }).problem?.reason == .fieldOutOfRange)
        // A line break in any string of a postback is refused by the JSON reader itself (public bodies are single-line).
        #expect(verifier.verify(try aak { $0.marketplaceID = "com.apple\nAppStore" }).problem?.reason == .malformedJSON)
        // An unknown kid is decoded with the same checks: a NUL cannot make two stored ids collide.
        let nul = try aak({ $0.postbackID = "0F3A5E4C-1B2D-4C3E-8F9A-0B1C2D3E4F5A\u{0}x" }, keyID: "unknown/9")
        #expect(verifier.verify(nul).outcome == .invalid)
        #expect(verifier.verify(try aak({ _ in }, keyID: "unknown/9")).outcome == .unverifiable)
    }

    @Test func unknownVersionsAreBoundedNotTrusted() throws {
        func unknown(_ change: (inout JSONObject) -> Void) throws -> VerificationResult {
            var object = try skan { $0.set("version", .string("9.1")) }
            change(&object)
            return verifier.verify(object: object)
        }
        #expect(try unknown { _ in }.problem?.reason == .unknownVersion)
        #expect(try unknown { $0.set("transaction-id", .string("a\u{0}b")) }.problem?.reason == .fieldOutOfRange)
        #expect(try unknown { $0.set("transaction-id", .string(String(repeating: "a", count: 256))) }.problem?.reason == .fieldOutOfRange)
        #expect(try unknown { $0.set("transaction-id", .string("a\u{2063}b")) }.problem?.reason == .fieldOutOfRange)
        #expect(try unknown { $0.set("version", .string("9.1\n")) }.problem?.reason == .fieldOutOfRange)
        #expect(try unknown { $0.set("version", .string("=cmd|' /C calc'!A0")) }.problem?.reason == .fieldOutOfRange)
        #expect(try unknown { $0.set("ad-network-id", .string("=HYPERLINK(\"x\")")) }.problem?.reason == .fieldOutOfRange)
        // A source-domain that is not printable is left out of the columns, not stored.
        let postback = try #require(try unknown { $0.set("source-domain", .string("a\u{1}b")) }.postback)
        #expect(postback.sourceDomain == nil)
    }

    @Test func countryCodesAreUpperCase() throws {
        let lower = try skan { $0.set("country-code", .string("us")) }
        #expect(verifier.verify(object: lower).postback?.countryCode == "US")
        let upper = try skan { $0.set("country-code", .string("US")) }
        #expect(verifier.verify(object: upper).postback?.countryCode == "US")
    }
}
