#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a compact JWS was refused before its signature could be checked, or by the check itself.
///
/// The raw values are stable codes shared with ``Postback``'s verification reasons.
public enum JWSFailure: String, Error, Sendable, CaseIterable {
    /// Not exactly three non-empty dot-separated segments.
    case malformedJWS = "malformed_jws"
    /// A segment is not strict unpadded base64url.
    case badBase64URL = "bad_base64url"
    /// The header is not a JSON object, or a member has the wrong type.
    case malformedHeader = "malformed_header"
    /// `alg` is not `ES256`.
    case unsupportedAlg = "unsupported_alg"
    /// `kid` is absent or empty.
    case missingKid = "missing_kid"
    /// The header lists `crit` extensions, which this verifier does not implement.
    case critHeader = "crit_header"
    /// The signature is not exactly 64 bytes.
    case signatureLength = "signature_length"
    /// The key ring has no key with this `kid`.
    case unknownKid = "unknown_kid"
    /// The signature does not verify with the chosen key.
    case badSignature = "bad_signature"
}

/// The JOSE header fields this verifier reads.
public struct JOSEHeader: Sendable, Equatable {
    /// The `alg` member.
    public let algorithm: String
    /// The `kid` member, JSON-decoded (Apple escapes `/` as `\/`).
    public let keyID: String
    /// The whole header object, for display.
    public let object: JSONObject
}

/// A compact JWS (RFC 7515 §7.1) parsed strictly for ES256.
///
/// Parsing checks structure and header only; ``verify(with:)`` checks the signature. The signing input
/// is kept as the bytes received, never re-encoded.
public struct CompactJWS: Sendable {
    /// The only algorithm accepted.
    public static let expectedAlgorithm = "ES256"
    /// The number of dot-separated segments in compact serialisation.
    public static let segmentCount = 3
    /// ES256 signature length: r and s, 32 bytes each.
    public static let signatureLength = 64

    /// The decoded header.
    public let header: JOSEHeader
    /// The decoded payload bytes.
    public let payload: [UInt8]
    /// The decoded signature (exactly 64 bytes).
    public let signature: [UInt8]
    /// `BASE64URL(header) "." BASE64URL(payload)` exactly as received.
    public let signingInput: [UInt8]

    /// Parses `text`, returning the first rule it breaks.
    public static func parse(_ text: [UInt8]) -> Result<CompactJWS, JWSFailure> {
        text.withUnsafeBufferPointer { parse(buffer: $0) }
    }

    /// Parses compact JWS text held in contiguous memory (for example a native string's UTF-8).
    public static func parse(buffer text: UnsafeBufferPointer<UInt8>) -> Result<CompactJWS, JWSFailure> {
        guard let base = text.baseAddress else { return .failure(.malformedJWS) }
        func dot(after start: Int) -> Int? {
            guard start < text.count, let found = memchr(base + start, Int32(UInt8(ascii: ".")), text.count - start) else { return nil }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
        guard let first = dot(after: 0), let second = dot(after: first + 1), dot(after: second + 1) == nil else {
            return .failure(.malformedJWS)
        }
        let dots = (first, second)
        let headerPart = UnsafeBufferPointer(rebasing: text[0..<dots.0])
        let payloadPart = UnsafeBufferPointer(rebasing: text[(dots.0 + 1)..<dots.1])
        let signaturePart = UnsafeBufferPointer(rebasing: text[(dots.1 + 1)...])
        guard !headerPart.isEmpty, !payloadPart.isEmpty, !signaturePart.isEmpty else { return .failure(.malformedJWS) }
        guard let headerBytes = Base64.decode(buffer: headerPart, alphabet: .url),
              let payload = Base64.decode(buffer: payloadPart, alphabet: .url),
              let signature = Base64.decode(buffer: signaturePart, alphabet: .url)
        else { return .failure(.badBase64URL) }
        guard let headerValue = try? JSONParser.parse(headerBytes, limits: .publicBody), let object = headerValue.object else {
            return .failure(.malformedHeader)
        }
        guard let algorithm = object["alg"]?.string else { return .failure(.malformedHeader) }
        guard algorithm == expectedAlgorithm else { return .failure(.unsupportedAlg) }
        guard object["crit"] == nil else { return .failure(.critHeader) }
        guard let keyIDValue = object["kid"] else { return .failure(.missingKid) }
        guard let keyID = keyIDValue.string else { return .failure(.malformedHeader) }
        guard !keyID.isEmpty else { return .failure(.missingKid) }
        guard signature.count == signatureLength else { return .failure(.signatureLength) }
        return .success(CompactJWS(
            header: JOSEHeader(algorithm: algorithm, keyID: keyID, object: object),
            payload: payload,
            signature: signature,
            signingInput: Array(UnsafeBufferPointer(rebasing: text[0..<dots.1]))
        ))
    }

    /// Checks the signature with `key`; the key must be on P-256.
    public func verify(with key: ECPublicKey) -> Bool {
        key.curve == .p256 && key.verify(rawSignature: signature, message: signingInput)
    }

    /// Signs `payload` as an ES256 compact JWS with `key`, putting `keyID` in the header.
    public static func sign(payload: [UInt8], keyID: String, with key: ECPrivateKey) throws(KeyError) -> String {
        guard key.curve == .p256 else { throw KeyError("ES256 needs a P-256 key") }
        var header = ""
        JSONValue.object(JSONObject([
            JSONMember(key: "alg", value: .string(expectedAlgorithm)),
            JSONMember(key: "kid", value: .string(keyID)),
        ])).serializedInto(&header)
        let signingInput = Base64.encode(Array(header.utf8), alphabet: .url) + "." + Base64.encode(payload, alphabet: .url)
        let signature = try key.signRaw(message: Array(signingInput.utf8))
        return signingInput + "." + Base64.encode(signature, alphabet: .url)
    }
}

extension JSONValue {
    fileprivate func serializedInto(_ output: inout String) { output += serialized }
}
