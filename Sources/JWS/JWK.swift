/// Imports a JSON Web Key (RFC 7517) as a key-ring entry, refusing keys not meant for ES256 verification.
public enum JWK {
    /// Builds an entry from an EC P-256 JWK; `use` must be `sig` and `key_ops` must include `verify` when present,
    /// `alg` must be ES256 when present, and `kid` is required.
    public static func entry(_ jwk: JSONObject, environment: KeyEnvironment, usages: Set<KeyUsage>, origin: String) throws(KeyError) -> KeyEntry {
        guard jwk["kty"]?.string == "EC", jwk["crv"]?.string == Curve.p256.rawValue else { throw KeyError("\(origin): not an EC P-256 JWK") }
        if let use = jwk["use"], use.string != "sig" { throw KeyError("\(origin): JWK use is not sig") }
        if let operations = jwk["key_ops"] {
            guard case .array(let list) = operations, list.contains(.string("verify")) else { throw KeyError("\(origin): JWK key_ops lacks verify") }
        }
        if let algorithm = jwk["alg"], algorithm.string != CompactJWS.expectedAlgorithm { throw KeyError("\(origin): JWK alg is not ES256") }
        guard let keyID = jwk["kid"]?.string, !keyID.isEmpty else { throw KeyError("\(origin): JWK has no kid") }
        guard let x = jwk["x"]?.string.flatMap({ Base64.decode(Array($0.utf8), alphabet: .url) }),
              let y = jwk["y"]?.string.flatMap({ Base64.decode(Array($0.utf8), alphabet: .url) }),
              x.count == Curve.p256.fieldSize, y.count == Curve.p256.fieldSize
        else { throw KeyError("\(origin): JWK coordinates are not 32-byte base64url") }
        let key = try ECPublicKey(uncompressedPoint: [0x04] + x + y, curve: .p256)
        return KeyEntry(keyID: keyID, key: key, environment: environment, usages: usages, origin: origin)
    }
}
