import Foundation
import Testing
@testable import JWS

/// Every Wycheproof ECDSA and ES256 JWS vector through Countersign's own verifier.
@Suite struct WycheproofTests {
    static let ecdsaFiles = [
        "ecdsa_secp256r1_sha256_test", "ecdsa_secp224r1_sha256_test", "ecdsa_secp192r1_sha256_test",
        "ecdsa_secp256r1_sha256_p1363_test", "ecdsa_secp224r1_sha256_p1363_test", "ecdsa_secp192r1_sha256_p1363_test",
    ]

    static func load(_ name: String) throws -> [String: Any] {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures/wycheproof"))
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    }

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// OpenSSL's `EVP_PKEY_verify` on the same input, bypassing the P-256 key table.
    static func evpVerdict(_ key: ECPublicKey, signature: [UInt8], message: [UInt8], raw: Bool) -> Bool {
        guard raw else { return key.verifyWithEVP(derSignature: signature, digest: sha256(message)) }
        guard signature.count == 2 * key.curve.fieldSize else { return false }
        return key.verifyWithEVP(derSignature: DER.ecdsaSignature(raw: signature), digest: sha256(message))
    }

    /// Every vector through `verify` (the key table for P-256) and, separately, through `EVP_PKEY_verify`.
    @Test("Wycheproof ECDSA verdicts match, through the P-256 key table and through EVP", arguments: ecdsaFiles)
    func ecdsaVectors(file: String) throws {
        let document = try Self.load(file)
        let raw = file.hasSuffix("p1363_test")
        var ran = 0
        var keyTables = 0
        var mismatches: [String] = []
        for group in try #require(document["testGroups"] as? [[String: Any]]) {
            let der = Self.hex(try #require(group["publicKeyDer"] as? String))
            let key = try? ECPublicKey(derSPKI: der)
            for test in try #require(group["tests"] as? [[String: Any]]) {
                let message = Self.hex(test["msg"] as! String)
                let signature = Self.hex(test["sig"] as! String)
                let expected = (test["result"] as! String) == "valid"
                let verdict = key.map { raw ? $0.verify(rawSignature: signature, message: message) : $0.verify(derSignature: signature, digest: sha256(message)) } ?? false
                let evpVerdict = key.map { Self.evpVerdict($0, signature: signature, message: message, raw: raw) } ?? false
                if verdict != expected { mismatches.append("tcId \(test["tcId"]!): expected \(expected), got \(verdict)") }
                if evpVerdict != expected { mismatches.append("tcId \(test["tcId"]!) through EVP: expected \(expected), got \(evpVerdict)") }
                ran += 1
            }
            if key?.keyTable != nil { keyTables += 1 }
        }
        print("\(file): \(ran) vectors, \(keyTables) key tables, \(mismatches.count) mismatches")
        #expect(ran == document["numberOfTests"] as? Int)
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
        // P-256 keys verify through their table (so the vectors above tested it); other curves never have one.
        let groups = (document["testGroups"] as? [[String: Any]])?.count ?? 0
        #expect(keyTables == (file.contains("secp256r1") ? groups : 0))
    }

    @Test("Wycheproof ES256 JWS cases (every group with an EC P-256 key) match")
    func jwsVectors() throws {
        let document = try Self.load("json_web_signature_test")
        var ran = 0
        var mismatches: [String] = []
        for group in try #require(document["testGroups"] as? [[String: Any]]) {
            guard let jwk = group["public"] as? [String: Any], jwk["kty"] as? String == "EC", jwk["crv"] as? String == "P-256" else { continue }
            let jwkText = try JSONSerialization.data(withJSONObject: jwk)
            let object = try #require(try JSONParser.parse(Array(jwkText)).object)
            // A JWK not meant for ES256 verification never enters the ring, so nothing verifies against it.
            let ring = try KeyRing((try? JWK.entry(object, environment: .production, usages: [.aak], origin: "wycheproof")).map { [$0] } ?? [])
            for test in try #require(group["tests"] as? [[String: Any]]) {
                let expected = (test["result"] as! String) == "valid"
                var verdict = false
                if let compact = test["jws"] as? String, case .success(let jws) = CompactJWS.parse(Array(compact.utf8)),
                   let entry = ring.entry(keyID: jws.header.keyID, usage: .aak) {
                    verdict = jws.verify(with: entry.key)
                }
                if verdict != expected { mismatches.append("tcId \(test["tcId"]!) \(test["comment"] ?? ""): expected \(expected)") }
                ran += 1
            }
        }
        print("json_web_signature_test (EC P-256 groups): \(ran) vectors, \(mismatches.count) mismatches")
        #expect(ran >= 40)
        #expect(mismatches.isEmpty, "\(mismatches)")
    }
}
