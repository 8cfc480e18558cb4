import JWS
import Synchronization

/// The key that last verified each ad network's SKAdNetwork postbacks, tried first next time.
///
/// SKAN postbacks carry no key id, so every pinned key on the version's curve is a candidate; an operator's extra
/// `--key` would otherwise cost a second signature check on every postback. The hint only changes the order of
/// tries, never the verdict.
final class SKANKeyHints: Sendable {
    private let hints = Mutex<[String: String]>([:])

    func preferred(adNetworkID: String) -> String? { hints.withLock { $0[adNetworkID] } }

    func remember(adNetworkID: String, keyID: String) {
        hints.withLock { hints in
            if hints[adNetworkID] != keyID, hints.count < 10_000 { hints[adNetworkID] = keyID }
        }
    }
}

/// The one entry point from raw bytes to a ``VerificationResult``.
///
/// Pure apart from OpenSSL: no I/O, no clock. The route hands it the body, the store persists what it returns.
public struct PostbackVerifier: Sendable {
    /// The pinned keys.
    public let keyRing: KeyRing
    private let skanHints = SKANKeyHints()

    /// Creates a verifier over `keyRing`.
    public init(keyRing: KeyRing) {
        self.keyRing = keyRing
    }

    /// Detects the family (or requires `expected`), checks the signature, decodes and range-checks every field.
    public func verify(_ body: [UInt8], expecting expected: PostbackProtocol? = nil) -> VerificationResult {
        let value: JSONValue
        do {
            value = try JSONParser.parse(body, keys: PostbackKeys.table, limits: .publicBody)
        } catch {
            return .invalid(FieldProblem(.malformedJSON, field: nil, "the body is not a postback's JSON object: \(error.located(in: body))"), family: nil)
        }
        guard let object = value.object else {
            return .invalid(FieldProblem(.malformedJSON, field: nil, "the body is not a JSON object"), family: nil)
        }
        return verify(object: object, expecting: expected)
    }

    /// Verifies an already-parsed body.
    public func verify(object: JSONObject, expecting expected: PostbackProtocol? = nil) -> VerificationResult {
        let family: PostbackProtocol
        if object["jws-string"] != nil {
            family = .aak
        } else if object["attribution-signature"] != nil || object["transaction-id"] != nil {
            family = .skan
        } else {
            return .invalid(FieldProblem(.unknownFormat, field: nil,
                "neither an AdAttributionKit postback (jws-string) nor a SKAdNetwork postback (transaction-id)"), family: nil)
        }
        if let expected, expected != family {
            return .invalid(FieldProblem(.wrongProtocol, field: nil,
                "this route takes \(expected.rawValue) postbacks; the body is \(family.rawValue)"), family: family)
        }
        switch family {
        case .aak: return verifyAAK(object)
        case .skan: return verifySKAN(object)
        }
    }

    private func verifyAAK(_ outer: JSONObject) -> VerificationResult {
        let jwsText: String
        do {
            jwsText = try FieldReader(object: outer).string("jws-string")
        } catch {
            return .invalid(error, family: .aak)
        }
        let jws: CompactJWS
        let parsed = jwsText.utf8.withContiguousStorageIfAvailable { CompactJWS.parse(buffer: $0) } ?? CompactJWS.parse(Array(jwsText.utf8))
        switch parsed {
        case .success(let parsed): jws = parsed
        case .failure(let failure):
            return .invalid(FieldProblem(VerificationReason(failure), field: "jws-string", "jws-string: \(failure.rawValue.replacingUnderscores)"), family: .aak)
        }
        guard let entry = keyRing.entry(keyID: jws.header.keyID, usage: .aak) else {
            do {
                let postback = try AAKPostback.decode(payload: jws.payload, outer: outer)
                return .unverifiable(postback, FieldProblem(.unknownKid, field: "jws-string", "no pinned key has kid \(jws.header.keyID)"))
            } catch {
                return .invalid(error, family: .aak)
            }
        }
        guard jws.verify(with: entry.key) else {
            return .invalid(FieldProblem(.badSignature, field: "jws-string", "the signature does not verify with key \(entry.keyID)"), family: .aak)
        }
        do {
            let postback = try AAKPostback.decode(payload: jws.payload, outer: outer)
            return .verified(postback, SignerIdentity(keyID: entry.keyID, environment: entry.environment))
        } catch {
            return .invalid(error, family: .aak)
        }
    }

    private func verifySKAN(_ object: JSONObject) -> VerificationResult {
        let declared: String
        do {
            declared = try SKANPostback.declaredVersion(object)
        } catch {
            return .invalid(error, family: .skan)
        }
        guard let version = SKANVersion(rawValue: declared) else {
            do {
                let postback = try SKANPostback.decodeUnknownVersion(object, version: declared)
                return .unverifiable(postback, FieldProblem(.unknownVersion, field: "version", "SKAdNetwork version \(declared) has no known signed-field order"))
            } catch {
                return .invalid(error, family: .skan)
            }
        }
        let signed: (bytes: [UInt8], fields: [String])
        let postback: Postback
        let signatureText: String?
        do {
            signed = try SKANPostback.signedString(object, version: version)
            postback = try SKANPostback.decode(object, version: version, signedFieldNames: signed.fields)
            let reader = FieldReader(object: object)
            // SKAdNetwork 1.0 postbacks may come without a signature; every later version signs.
            signatureText = version == .v1_0 ? try reader.optionalString("attribution-signature") : try reader.string("attribution-signature")
        } catch {
            return .invalid(error, family: .skan)
        }
        var candidates = keyRing.entries(usage: .skan, curve: version.curve)
        if candidates.count > 1, let preferred = skanHints.preferred(adNetworkID: postback.adNetworkID),
           let index = candidates.firstIndex(where: { $0.keyID == preferred }) {
            candidates.swapAt(0, index)
        }
        guard let signatureText, !candidates.isEmpty else {
            let why = signatureText == nil ? "this 1.0 postback carries no attribution-signature" : "no pinned \(version.curve.rawValue) key for SKAdNetwork \(declared)"
            return .unverifiable(postback, FieldProblem(.noKey, field: "attribution-signature", why))
        }
        guard let signature = Base64.decode(Array(signatureText.utf8), alphabet: .standard) else {
            return .invalid(FieldProblem(.badBase64, field: "attribution-signature", "attribution-signature is not strict base64"), family: .skan)
        }
        let digest = sha256(signed.bytes)
        for entry in candidates where entry.key.verify(derSignature: signature, digest: digest) {
            if candidates.count > 1 { skanHints.remember(adNetworkID: postback.adNetworkID, keyID: entry.keyID) }
            return .verified(postback, SignerIdentity(keyID: entry.keyID, environment: entry.environment))
        }
        return .invalid(FieldProblem(.badSignature, field: "attribution-signature",
            "the signature does not verify with any pinned \(version.curve.rawValue) key"), family: .skan)
    }

    /// The exact bytes Apple signs for a SKAdNetwork postback of a known version, for display and tests.
    public static func skanSignedString(_ object: JSONObject) -> Result<[UInt8], FieldProblem> {
        do {
            let declared = try SKANPostback.declaredVersion(object)
            guard let version = SKANVersion(rawValue: declared) else {
                return .failure(FieldProblem(.unknownVersion, field: "version", "unknown version \(declared)"))
            }
            return .success(try SKANPostback.signedString(object, version: version).bytes)
        } catch {
            return .failure(error)
        }
    }
}

extension String {
    fileprivate var replacingUnderscores: String { String(map { $0 == "_" ? " " : $0 }) }
}
