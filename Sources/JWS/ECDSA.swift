import COpenSSL
import Synchronization

/// The NIST curves Countersign verifies: P-256 for AdAttributionKit and SKAdNetwork 2.1+,
/// P-192 for SKAdNetwork 1.0 and 2.0, and P-224 because the Wycheproof suites cover it.
public enum Curve: String, Sendable, CaseIterable {
    case p192 = "P-192"
    case p224 = "P-224"
    case p256 = "P-256"

    /// Size in bytes of a field element, and so of r and s in a raw signature.
    public var fieldSize: Int {
        switch self {
        case .p192: 24
        case .p224: 28
        case .p256: 32
        }
    }

    var nid: Int32 {
        switch self {
        case .p192: NID_X9_62_prime192v1
        case .p224: NID_secp224r1
        case .p256: NID_X9_62_prime256v1
        }
    }

    /// DER prefix of a SubjectPublicKeyInfo holding an uncompressed point on this curve.
    var spkiPrefix: [UInt8] {
        switch self {
        case .p192: [0x30, 0x49, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x01, 0x03, 0x32, 0x00]
        case .p224: [0x30, 0x4E, 0x30, 0x10, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x21, 0x03, 0x3A, 0x00]
        case .p256: [0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00]
        }
    }

    init?(groupName: String) {
        switch groupName {
        case "prime192v1", "secp192r1", "P-192": self = .p192
        case "secp224r1", "P-224": self = .p224
        case "prime256v1", "secp256r1", "P-256": self = .p256
        default: return nil
        }
    }
}

/// Why a key could not be loaded or used.
public struct KeyError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in one line.
    public let message: String
    /// Creates a key error.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// SHA-256 of `message`.
public func sha256(_ message: [UInt8]) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: 32) { digest, initialized in
        message.withUnsafeBufferPointer { buffer in _ = SHA256(buffer.baseAddress, buffer.count, digest.baseAddress) }
        initialized = 32
    }
}

/// An ECDSA public key held as an OpenSSL `EVP_PKEY` for the life of the process.
///
/// A P-256 key builds its ``P256KeyTable`` on its first verify and verifies through it from then on.
/// Other curves, and P-256 where OpenSSL cannot build the table, use `EVP_PKEY_verify`, with a small
/// pool of initialised `EVP_PKEY_CTX` objects so the hot path does not fetch the algorithm from
/// OpenSSL's provider on every call; each context is used by one thread at a time.
public final class ECPublicKey: @unchecked Sendable {
    /// The curve the key is on.
    public let curve: Curve
    private let pkey: OpaquePointer
    private let contexts = Mutex<[VerifyContext]>([])
    private let table = Mutex<KeyTableState>(.notBuilt)

    init(taking pkey: OpaquePointer) throws(KeyError) {
        guard EVP_PKEY_get_base_id(pkey) == NID_X9_62_id_ecPublicKey else {
            EVP_PKEY_free(pkey)
            throw KeyError("not an EC key")
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pkey, &name, name.count, &length) == 1,
              let curve = Curve(groupName: String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        else {
            EVP_PKEY_free(pkey)
            throw KeyError("unsupported curve (P-192, P-224 and P-256 are supported)")
        }
        self.curve = curve
        self.pkey = pkey
    }

    /// Loads a PEM `PUBLIC KEY` (SubjectPublicKeyInfo); text before the PEM block is ignored.
    public convenience init(pem: String) throws(KeyError) {
        guard let pkey = withBIO(pem, { PEM_read_bio_PUBKEY($0, nil, nil, nil) }) else {
            ERR_clear_error()
            if pem.contains("PRIVATE KEY-----") {
                throw KeyError("this is a private key; pin the public key instead (countersign keys generate writes public-key.pem beside private-key.pem), and keep private keys away from the server")
            }
            throw KeyError("no PEM public key found")
        }
        try self.init(taking: pkey)
    }

    /// Loads a DER SubjectPublicKeyInfo.
    public convenience init(derSPKI: [UInt8]) throws(KeyError) {
        let pkey: OpaquePointer? = derSPKI.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pkey else {
            ERR_clear_error()
            throw KeyError("invalid DER public key")
        }
        try self.init(taking: pkey)
    }

    /// Loads an uncompressed point (`04 || x || y`) on `curve`, as JWK coordinates give it.
    public convenience init(uncompressedPoint: [UInt8], curve: Curve) throws(KeyError) {
        guard uncompressedPoint.count == 1 + 2 * curve.fieldSize, uncompressedPoint.first == 0x04 else {
            throw KeyError("not an uncompressed \(curve.rawValue) point")
        }
        try self.init(derSPKI: curve.spkiPrefix + uncompressedPoint)
    }

    deinit {
        contexts.withLock { pool in pool.forEach { EVP_PKEY_CTX_free($0.pointer) } }
        EVP_PKEY_free(pkey)
    }

    /// The key as DER SubjectPublicKeyInfo.
    public var derSPKI: [UInt8] { spki(of: pkey) }

    /// The key as a PEM `PUBLIC KEY` block.
    public var pem: String { pemString { PEM_write_bio_PUBKEY($0, pkey) } }

    /// Verifies a strict-DER ECDSA signature over SHA-256(`message`).
    public func verify(derSignature: [UInt8], message: [UInt8]) -> Bool {
        verify(derSignature: derSignature, digest: sha256(message))
    }

    /// Verifies a raw `r || s` signature (JOSE form) over SHA-256(`message`).
    ///
    /// The signature must be exactly twice the field size.
    public func verify(rawSignature: [UInt8], message: [UInt8]) -> Bool {
        guard rawSignature.count == 2 * curve.fieldSize else { return false }
        let digest = sha256(message)
        if let keyTable { return keyTable.verify(rawSignature: rawSignature, digest: digest) }
        return verifyWithEVP(derSignature: DER.ecdsaSignature(raw: rawSignature), digest: digest)
    }

    /// Verifies a strict-DER signature over a precomputed SHA-256 digest.
    public func verify(derSignature: [UInt8], digest: [UInt8]) -> Bool {
        if let keyTable { return keyTable.verify(derSignature: derSignature, digest: digest) }
        return verifyWithEVP(derSignature: derSignature, digest: digest)
    }

    /// Builds the key's fixed-base table now (about 25 ms for a P-256 key; nothing for other curves), so the first
    /// verification does not pay for it: a server prepares its pinned keys before it listens.
    public func prepare() {
        _ = keyTable
    }

    /// The key's fixed-base table: built on the first call for a P-256 key, nil for other curves or when OpenSSL cannot build it.
    var keyTable: P256KeyTable? {
        guard curve == .p256 else { return nil }
        return table.withLock { state in
            switch state {
            case .built(let keyTable): return keyTable
            case .unavailable: return nil
            case .notBuilt:
                let keyTable = P256KeyTable(publicKey: pkey)
                state = keyTable.map { .built($0) } ?? .unavailable
                return keyTable
            }
        }
    }

    /// Verifies a strict-DER signature with OpenSSL's `EVP_PKEY_verify` alone, never the key table: the
    /// reference that tests and benchmarks compare the table against.
    public func verifyWithEVP(derSignature: [UInt8], digest: [UInt8]) -> Bool {
        guard let context = takeContext() else { return false }
        let result = derSignature.withUnsafeBufferPointer { signature in
            digest.withUnsafeBufferPointer { digest in
                EVP_PKEY_verify(context, signature.baseAddress, signature.count, digest.baseAddress, digest.count)
            }
        }
        if result != 1 { ERR_clear_error() }
        contexts.withLock { $0.append(VerifyContext(pointer: context)) }
        return result == 1
    }

    private func takeContext() -> OpaquePointer? {
        if let context = contexts.withLock({ $0.popLast() }) { return context.pointer }
        guard let context = EVP_PKEY_CTX_new(pkey, nil) else { return nil }
        guard EVP_PKEY_verify_init(context) == 1 else {
            EVP_PKEY_CTX_free(context)
            ERR_clear_error()
            return nil
        }
        return context
    }
}

/// Whether a key's ``P256KeyTable`` has been built.
private enum KeyTableState {
    case notBuilt
    case built(P256KeyTable)
    case unavailable
}

/// An initialised verification context; the pool hands each to one caller at a time.
private struct VerifyContext: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// An ECDSA private key, for ad networks signing impressions and for the simulator.
public final class ECPrivateKey: @unchecked Sendable {
    /// The curve the key is on.
    public let curve: Curve
    /// The matching public key.
    public let publicKey: ECPublicKey
    private let pkey: OpaquePointer

    private init(taking pkey: OpaquePointer) throws(KeyError) {
        do {
            publicKey = try ECPublicKey(derSPKI: spki(of: pkey))
        } catch {
            EVP_PKEY_free(pkey)
            throw error
        }
        curve = publicKey.curve
        self.pkey = pkey
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Generates a fresh key pair on `curve`.
    public static func generate(curve: Curve = .p256) throws(KeyError) -> ECPrivateKey {
        guard let context = EVP_PKEY_CTX_new_id(NID_X9_62_id_ecPublicKey, nil) else { throw KeyError("cannot create key context") }
        defer { EVP_PKEY_CTX_free(context) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
              EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, curve.nid) == 1,
              EVP_PKEY_keygen(context, &pkey) == 1, let pkey
        else {
            ERR_clear_error()
            throw KeyError("key generation failed")
        }
        return try ECPrivateKey(taking: pkey)
    }

    /// Loads a PEM private key (`PRIVATE KEY` PKCS#8 or `EC PRIVATE KEY` SEC1).
    public convenience init(pem: String) throws(KeyError) {
        guard let pkey = withBIO(pem, { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else {
            ERR_clear_error()
            throw KeyError("no PEM private key found")
        }
        guard EVP_PKEY_get_base_id(pkey) == NID_X9_62_id_ecPublicKey else {
            EVP_PKEY_free(pkey)
            throw KeyError("not an EC key")
        }
        try self.init(taking: pkey)
    }

    /// The key as a PKCS#8 PEM `PRIVATE KEY` block.
    public var pem: String { pemString { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) } }

    /// Signs SHA-256(`message`) and returns a DER signature.
    public func signDER(message: [UInt8]) throws(KeyError) -> [UInt8] {
        let digest = sha256(message)
        guard let context = EVP_PKEY_CTX_new(pkey, nil) else { throw KeyError("cannot create signing context") }
        defer { EVP_PKEY_CTX_free(context) }
        var length = 0
        guard EVP_PKEY_sign_init(context) == 1, EVP_PKEY_sign(context, nil, &length, digest, digest.count) == 1 else {
            ERR_clear_error()
            throw KeyError("signing failed")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_sign(context, &signature, &length, digest, digest.count) == 1 else {
            ERR_clear_error()
            throw KeyError("signing failed")
        }
        return Array(signature.prefix(length))
    }

    /// Signs SHA-256(`message`) and returns raw `r || s`, as JWS ES256 wants it.
    public func signRaw(message: [UInt8]) throws(KeyError) -> [UInt8] {
        let der = try signDER(message: message)
        guard let raw = DER.rawSignature(der: der, fieldSize: curve.fieldSize) else { throw KeyError("signing produced bad DER") }
        return raw
    }
}

/// Strict DER encoding for ECDSA signatures, done by hand because it is on every request's path.
enum DER {
    /// `SEQUENCE { INTEGER r, INTEGER s }` for a raw `r || s` signature split in half.
    static func ecdsaSignature(raw: [UInt8]) -> [UInt8] {
        let half = raw.count / 2
        let r = integer(raw[0..<half])
        let s = integer(raw[half...])
        var output: [UInt8] = [0x30]
        appendLength(r.count + s.count, to: &output)
        output += r
        output += s
        return output
    }

    private static func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var value = bytes.drop(while: { $0 == 0 })
        if value.isEmpty { value = [0] }
        var content = Array(value)
        if content[0] & 0x80 != 0 { content.insert(0, at: 0) }
        var output: [UInt8] = [0x02]
        appendLength(content.count, to: &output)
        return output + content
    }

    private static func appendLength(_ length: Int, to output: inout [UInt8]) {
        if length < 0x80 {
            output.append(UInt8(length))
        } else {
            output.append(0x81)
            output.append(UInt8(length))
        }
    }

    /// Raw `r || s` from a DER signature, each padded to `fieldSize`.
    static func rawSignature(der: [UInt8], fieldSize: Int) -> [UInt8]? {
        der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var cursor = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else { return nil }
            defer { ECDSA_SIG_free(signature) }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(signature, &r, &s)
            var output = [UInt8](repeating: 0, count: 2 * fieldSize)
            let ok = output.withUnsafeMutableBufferPointer { out in
                BN_bn2binpad(r, out.baseAddress, Int32(fieldSize)) == fieldSize
                    && BN_bn2binpad(s, out.baseAddress! + fieldSize, Int32(fieldSize)) == fieldSize
            }
            return ok ? output : nil
        }
    }
}

/// The DER SubjectPublicKeyInfo of a key (public or private).
private func spki(of pkey: OpaquePointer) -> [UInt8] {
    let length = i2d_PUBKEY(pkey, nil)
    var der = [UInt8](repeating: 0, count: Int(max(length, 0)))
    der.withUnsafeMutableBufferPointer { buffer in
        var cursor = buffer.baseAddress
        _ = i2d_PUBKEY(pkey, &cursor)
    }
    return der
}

private func withBIO(_ text: String, _ body: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
    var bytes = Array(text.utf8)
    return bytes.withUnsafeMutableBytes { buffer -> OpaquePointer? in
        guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
        defer { BIO_free(bio) }
        return body(bio)
    }
}

private func pemString(_ write: (OpaquePointer) -> Int32) -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { return "" }
    defer { BIO_free(bio) }
    guard write(bio) == 1 else { return "" }
    var output = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 1024)
    while true {
        let read = BIO_read(bio, &chunk, Int32(chunk.count))
        if read <= 0 { break }
        output += chunk.prefix(Int(read))
    }
    return String(decoding: output, as: UTF8.self)
}
