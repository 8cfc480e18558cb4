import Foundation
import Testing
@testable import JWS

@Suite struct Base64Tests {
    @Test func roundTripsBothAlphabets() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            for alphabet in [Base64.Alphabet.url, .standard] {
                let text = Base64.encode(bytes, alphabet: alphabet)
                #expect(Base64.decode(Array(text.utf8), alphabet: alphabet) == bytes)
            }
        }
    }

    @Test(arguments: ["Zm9v=", "Zm9v ", "Zm+v", "Zm/v", "Zg=", "Z", "Zh"])
    func urlRejectsNonCanonical(text: String) {
        #expect(Base64.decode(Array(text.utf8), alphabet: .url) == nil)
    }

    @Test(arguments: ["Zg", "Zg=", "Zm9v-_", "Zh=="])
    func standardRejectsNonCanonical(text: String) {
        #expect(Base64.decode(Array(text.utf8), alphabet: .standard) == nil)
    }
}

@Suite struct JSONTests {
    @Test func parsesEscapesNumbersAndOrder() throws {
        let value = try JSONParser.parse(Array(#"{"kid":"apple-development-identifier\/1","n":10738027756,"u":"\u00e9\ud83d\ude00","a":[true,null,-1.5e3]}"#.utf8))
        let object = try #require(value.object)
        #expect(object["kid"]?.string == "apple-development-identifier/1")
        #expect(object["n"]?.int64 == 10738027756)
        #expect(object["u"]?.string == "é😀")
        #expect(object.members.map(\.key) == ["kid", "n", "u", "a"])
        #expect(object["a"] == .array([.bool(true), .null, .number("-1.5e3")]))
        #expect(try JSONParser.parse(Array(value.serialized.utf8)) == value)
    }

    /// The writer escapes exactly what JSON requires (quote, backslash, the C0 controls) and nothing else; every
    /// string survives an independent reader (Foundation's) unchanged, compact and pretty alike.
    @Test func writesEscapesExactlyAndPrettyText() throws {
        let tricky = "q\"b\\n\nr\rt\tz\u{0}\u{1F}é😀\u{7F}\u{2028}"
        let value = JSONValue.object(JSONObject([JSONMember(key: "k\"", value: .string(tricky)), JSONMember(key: "a", value: .array([.number("1.5e3"), .bool(false), .null, .array([]), .object(JSONObject([]))]))]))
        #expect(value.serialized == #"{"k\"":"q\"b\\n\nr\rt\tz\u0000\u001fé😀\#u{7F}\#u{2028}","a":[1.5e3,false,null,[],{}]}"#)
        let member = try #require(value.object?["k\""]).serialized
        #expect(value.prettyPrinted == "{\n  \"k\\\"\": " + member + ",\n  \"a\": [\n    1.5e3,\n    false,\n    null,\n    [],\n    {}\n  ]\n}")
        for text in [value.serialized, value.prettyPrinted] {
            let read = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            #expect(read["k\""] as? String == tricky)
        }
        var bytes: [UInt8] = Array("x".utf8)
        value.write(into: &bytes)
        #expect(bytes == Array(("x" + value.serialized).utf8))
    }

    @Test(arguments: [#"{"a":1,"a":2}"#, #"{"a":01}"#, #"{"a":1,}"#, #"{"a":"\x"}"#, "[1] x", #"{"a":"\ud800"}"#, "", #"{"a":tru}"#,
                      String(repeating: "[", count: 40) + String(repeating: "]", count: 40)])
    func rejectsMalformed(text: String) {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Array(text.utf8)) }
    }

    @Test func integersOutsideInt64AreNotIntegers() throws {
        let value = try JSONParser.parse(Array("[9223372036854775808, -9223372036854775809, 1.0, 1e3, 2E0, -0.5, \"7\"]".utf8))
        guard case .array(let items) = value else { Issue.record("not an array"); return }
        #expect(items.allSatisfy { $0.int64 == nil })
    }

    @Test func wholeNumbersToTheEdgesOfInt64() throws {
        let value = try JSONParser.parse(Array("[0, -0, 7, -42, 9223372036854775807, -9223372036854775808]".utf8))
        guard case .array(let items) = value else { Issue.record("not an array"); return }
        #expect(items.map(\.int64) == [0, 0, 7, -42, .max, .min])
    }
}

@Suite struct CompactJWSTests {
    let key = try! ECPrivateKey.generate()

    func token(header: String, payload: String = #"{"a":1}"#) throws -> [UInt8] {
        let input = Base64.encode(Array(header.utf8), alphabet: .url) + "." + Base64.encode(Array(payload.utf8), alphabet: .url)
        return Array((input + "." + Base64.encode(try key.signRaw(message: Array(input.utf8)), alphabet: .url)).utf8)
    }

    @Test func signThenVerify() throws {
        let jws = try CompactJWS.sign(payload: Array(#"{"x":true}"#.utf8), keyID: "k/1", with: key)
        guard case .success(let parsed) = CompactJWS.parse(Array(jws.utf8)) else { Issue.record("did not parse"); return }
        #expect(parsed.header.keyID == "k/1")
        #expect(parsed.verify(with: key.publicKey))
        #expect(!parsed.verify(with: try ECPrivateKey.generate().publicKey))
    }

    @Test func everyFlippedBitFails() throws {
        let jws = Array(try CompactJWS.sign(payload: Array(#"{"postback":1}"#.utf8), keyID: "k", with: key).utf8)
        guard case .success(let original) = CompactJWS.parse(jws) else { Issue.record("did not parse"); return }
        for index in original.signingInput.indices {
            for bit in 0..<8 {
                var input = original.signingInput
                input[index] ^= 1 << bit
                #expect(!key.publicKey.verify(rawSignature: original.signature, message: input))
            }
        }
        for index in original.signature.indices {
            for bit in 0..<8 {
                var signature = original.signature
                signature[index] ^= 1 << bit
                #expect(!key.publicKey.verify(rawSignature: signature, message: original.signingInput))
            }
        }
    }

    @Test func headerRules() throws {
        func failure(_ bytes: [UInt8]) -> JWSFailure? {
            if case .failure(let failure) = CompactJWS.parse(bytes) { return failure }
            return nil
        }
        #expect(failure(try token(header: #"{"alg":"none","kid":"k"}"#)) == .unsupportedAlg)
        #expect(failure(try token(header: #"{"alg":"HS256","kid":"k"}"#)) == .unsupportedAlg)
        #expect(failure(try token(header: #"{"alg":"ES256"}"#)) == .missingKid)
        #expect(failure(try token(header: #"{"alg":"ES256","kid":""}"#)) == .missingKid)
        #expect(failure(try token(header: #"{"alg":"ES256","kid":"k","crit":["b64"]}"#)) == .critHeader)
        #expect(failure(try token(header: #"{"alg":"ES256","kid":7}"#)) == .malformedHeader)
        #expect(failure(try token(header: "[1]")) == .malformedHeader)
        #expect(failure(Array("a.b".utf8)) == .malformedJWS)
        #expect(failure(Array("a.b.c.d".utf8)) == .malformedJWS)
        #expect(failure(Array("a..c".utf8)) == .malformedJWS)
        #expect(failure(Array("a=.b.c".utf8)) == .badBase64URL)
        var short = try token(header: #"{"alg":"ES256","kid":"k"}"#)
        short.removeLast(4)
        #expect(failure(short) == .signatureLength || failure(short) == .badBase64URL)
    }

    @Test func keyRingHasNoFallback() throws {
        let ring = try KeyRing([KeyEntry(keyID: "a/0", key: key.publicKey, environment: .production, usages: [.aak], origin: "test")])
        #expect(ring.entry(keyID: "a/0", usage: .aak) != nil)
        #expect(ring.entry(keyID: "a/1", usage: .aak) == nil)
        #expect(ring.entry(keyID: "A/0", usage: .aak) == nil)
        #expect(ring.entry(keyID: "a/0", usage: .skan) == nil)
        #expect(throws: KeyError.self) { try ring.adding([ring.entries[0]]) }
    }

    @Test func keyFileHeaderLines() throws {
        let text = "kid: apple-development-identifier/0\nenvironment: development\nusage: aak\n" + key.publicKey.pem
        let entry = try KeyEntry.parse(fileText: text, origin: "x.pem", defaultKeyID: "x")
        #expect(entry.keyID == "apple-development-identifier/0")
        #expect(entry.environment == .development)
        #expect(entry.usages == [.aak])
        #expect(try KeyEntry.parse(fileText: key.publicKey.pem, origin: "y.pem", defaultKeyID: "y").keyID == "y")
    }

    @Test(arguments: Curve.allCases)
    func derSignaturesOnEveryCurve(curve: Curve) throws {
        let key = try ECPrivateKey.generate(curve: curve)
        let message = Array("attribution".utf8)
        let der = try key.signDER(message: message)
        #expect(key.publicKey.verify(derSignature: der, message: message))
        #expect(!key.publicKey.verify(derSignature: der, message: Array("attributioN".utf8)))
        let raw = try key.signRaw(message: message)
        #expect(raw.count == 2 * curve.fieldSize)
        #expect(key.publicKey.verify(rawSignature: raw, message: message))
        #expect(try ECPublicKey(pem: key.publicKey.pem).derSPKI == key.publicKey.derSPKI)
        #expect(try ECPrivateKey(pem: key.pem).publicKey.derSPKI == key.publicKey.derSPKI)
    }
}

@Suite struct P256KeyTableTests {
    /// Many tasks verifying with one key at once share its table and its pool of working values.
    @Test func concurrentVerificationsWithOneKeyAgreeWithEVP() async throws {
        let key = try ECPrivateKey.generate(curve: .p256)
        let messages = (0..<64).map { Array("postback \($0)".utf8) }
        let signatures = try messages.map { try key.signRaw(message: $0) }
        let publicKey = key.publicKey
        let verdicts = await withTaskGroup(of: (Int, Bool, Bool).self) { group in
            for round in 0..<8 {
                for index in messages.indices {
                    group.addTask {
                        // Every other round checks the signature against the next message, which must fail.
                        let message = round.isMultiple(of: 2) ? messages[index] : messages[(index + 1) % messages.count]
                        let table = publicKey.verify(rawSignature: signatures[index], message: message)
                        let evp = publicKey.verifyWithEVP(derSignature: DER.ecdsaSignature(raw: signatures[index]), digest: sha256(message))
                        return (round, table, evp)
                    }
                }
            }
            return await group.reduce(into: [(Int, Bool, Bool)]()) { $0.append($1) }
        }
        #expect(verdicts.count == 8 * messages.count)
        #expect(verdicts.allSatisfy { round, table, evp in table == round.isMultiple(of: 2) && evp == table })
        #expect(publicKey.keyTable != nil)
    }

    @Test(arguments: [Curve.p192, .p224])
    func otherCurvesHaveNoTable(curve: Curve) throws {
        let key = try ECPrivateKey.generate(curve: curve)
        let message = Array("attribution".utf8)
        #expect(key.publicKey.verify(rawSignature: try key.signRaw(message: message), message: message))
        #expect(key.publicKey.keyTable == nil)
    }
}
